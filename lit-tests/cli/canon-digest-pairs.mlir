// RUN: %mck canon --digest %data/corpus/tpu/tpu_pallas_add.nounzip.a.generic.mlir > %t
// RUN: %mck canon --digest %data/corpus/tpu/tpu_pallas_add.nounzip.b.generic.mlir >> %t
// RUN: %mck canon --digest %data/corpus/gpu/cuda_pallas_triton_add.a.generic.mlir >> %t
// RUN: %mck canon --digest %data/corpus/gpu/cuda_pallas_triton_add.b.generic.mlir >> %t
// RUN: FileCheck %s < %t

// The CLI gives each relocated kernel pair one digest.

// CHECK: [[MOSAIC:[0-9a-f]{64}]]
// CHECK-NEXT: [[MOSAIC]]
// CHECK-NEXT: [[TRITON:[0-9a-f]{64}]]
// CHECK-NEXT: [[TRITON]]
