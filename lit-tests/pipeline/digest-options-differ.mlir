// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/corpus/tpu/tpu_pallas_add.a.generic.mlir > %t.default
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest{keep-locations=true})' %data/corpus/tpu/tpu_pallas_add.a.generic.mlir > %t.keep
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest{kernels=keep})' %data/corpus/tpu/tpu_pallas_add.a.generic.mlir > %t.kernels
// RUN: cat %t.default %t.keep %t.kernels | FileCheck %s

// Each option that changes canonical bytes changes the digest.

// CHECK: cache_key.digest = "[[DEFAULT:[0-9a-f]+]]"
// CHECK-NOT: [[DEFAULT]]
// CHECK: cache_key.digest = "[[KEEP:[0-9a-f]+]]"
// CHECK-NOT: [[DEFAULT]]
// CHECK-NOT: [[KEEP]]
// CHECK: cache_key.digest = "{{[0-9a-f]+}}"
// CHECK-NOT: [[DEFAULT]]
// CHECK-NOT: [[KEEP]]
