// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest{kernels=keep})' %data/corpus/gpu/cuda_pallas_triton_add.a.generic.mlir > %t.a
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest{kernels=keep})' %data/corpus/gpu/cuda_pallas_triton_add.b.generic.mlir > %t.b
// RUN: cat %t.a %t.b | FileCheck %s

// Without kernel stripping (JAX's behaviour) the relocated Triton pair misses.

// CHECK: cache_key.digest = "[[DIGEST:[0-9a-f]+]]"
// CHECK: cache_key.digest = "{{[0-9a-f]+}}"
// CHECK-NOT: [[DIGEST]]
