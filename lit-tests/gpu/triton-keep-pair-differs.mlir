// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest{kernels=keep})' %data/corpus/gpu/cuda_pallas_triton_add.a.generic.mlir | %extract-digest > %t.a
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest{kernels=keep})' %data/corpus/gpu/cuda_pallas_triton_add.b.generic.mlir | %extract-digest > %t.b
// RUN: cat %t.a %t.b | FileCheck %s
// RUN: not diff %t.a %t.b
// Without kernel stripping (JAX's behavior) the relocated Triton pair misses:
// one digest each, and they differ.
// CHECK: {{^[0-9a-f]{64}$}}
// CHECK-NEXT: {{^[0-9a-f]{64}$}}
// CHECK-NOT: {{.}}
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt digest-constant
// MUTANT: mlir-opt drop-option kernels
