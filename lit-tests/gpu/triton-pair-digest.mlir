// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/corpus/gpu/cuda_pallas_triton_add.a.generic.mlir > %t.a
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/corpus/gpu/cuda_pallas_triton_add.b.generic.mlir > %t.b
// RUN: cat %t.a %t.b | FileCheck %s

// A Pallas Triton kernel, relocated: the kernel's own locations are stripped
// at the bytecode-container level, so both share one digest (JAX misses here).

// CHECK: cache_key.digest = "[[DIGEST:[0-9a-f]+]]"
// CHECK: cache_key.digest = "[[DIGEST]]"
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt digest-fresh
// MUTANT: mlir-opt add-option kernels=keep
