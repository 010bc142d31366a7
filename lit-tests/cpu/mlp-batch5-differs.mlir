// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/corpus/cpu/mlp.a.generic.mlir > %t.a
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/corpus/cpu/mlp.a_batch5.generic.mlir > %t.b
// RUN: cat %t.a %t.b | FileCheck %s

// Batch 5 instead of 4 is another program: the digests must differ.

// CHECK: cache_key.digest = "[[DIGEST:[0-9a-f]+]]"
// CHECK: cache_key.digest = "{{[0-9a-f]+}}"
// CHECK-NOT: [[DIGEST]]
