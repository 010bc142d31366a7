// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/corpus/tpu/tpu_pallas_add.nounzip.a.generic.mlir > %t.a
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/corpus/tpu/tpu_pallas_add.nounzip.b.generic.mlir > %t.b
// RUN: cat %t.a %t.b | FileCheck %s

// Locations inside the base64 kernel body (bytecode v0 by MLIR 24, which
// MLIR 22 cannot read) are stripped at the container level: one digest.

// CHECK: cache_key.digest = "[[DIGEST:[0-9a-f]+]]"
// CHECK: cache_key.digest = "[[DIGEST]]"
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt digest-fresh
// MUTANT: mlir-opt add-option kernels=keep
