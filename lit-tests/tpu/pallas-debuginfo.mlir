// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize)' --mlir-print-debuginfo %data/corpus/tpu/tpu_pallas_add.nounzip.b.generic.mlir | FileCheck %s

// --mlir-print-debuginfo confirms no file location survives in a TPU module
// with an in-body Pallas kernel.

// CHECK-NOT: loc("/
// CHECK: #loc = loc(unknown)
// CHECK: %arg0: tensor<256x256xf32> loc(unknown)
// CHECK-NOT: loc("/
