// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest{keep-locations=true})' %data/corpus/cpu/mlp.a.generic.mlir > %t.a
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest{keep-locations=true})' %data/corpus/cpu/mlp.b.generic.mlir > %t.b
// RUN: cat %t.a %t.b | FileCheck %s

// With locations in the key, the relocated twin gets another digest.

// CHECK: cache_key.digest = "[[DIGEST:[0-9a-f]+]]"
// CHECK: cache_key.digest = "{{[0-9a-f]+}}"
// CHECK-NOT: [[DIGEST]]
