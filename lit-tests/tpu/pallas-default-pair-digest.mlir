// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/corpus/tpu/tpu_pallas_add.a.generic.mlir > %t.a
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/corpus/tpu/tpu_pallas_add.b.generic.mlir > %t.b
// RUN: cat %t.a %t.b | FileCheck %s

// Default-mode Mosaic kernels differ only in their debug_locations blob:
// one digest once it is dropped.

// CHECK: cache_key.digest = "[[DIGEST:[0-9a-f]+]]"
// CHECK: cache_key.digest = "[[DIGEST]]"
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt digest-fresh
// MUTANT: mlir-opt add-option kernels=keep
