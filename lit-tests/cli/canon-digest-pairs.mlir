// RUN: %mck canon --digest %data/corpus/tpu/tpu_pallas_add.nounzip.a.generic.mlir > %t.mosaic.a
// RUN: %mck canon --digest %data/corpus/tpu/tpu_pallas_add.nounzip.b.generic.mlir > %t.mosaic.b
// RUN: %mck canon --digest %data/corpus/gpu/cuda_pallas_triton_add.a.generic.mlir > %t.triton.a
// RUN: %mck canon --digest %data/corpus/gpu/cuda_pallas_triton_add.b.generic.mlir > %t.triton.b
// RUN: cat %t.mosaic.a %t.mosaic.b %t.triton.a %t.triton.b | FileCheck %s
// RUN: not diff %t.mosaic.a %t.triton.a
// The CLI gives each relocated kernel pair one digest, and the two programs
// two digests.
// CHECK: {{^}}[[MOSAIC:[0-9a-f]{64}]]{{$}}
// CHECK-NEXT: {{^}}[[MOSAIC]]{{$}}
// CHECK-NEXT: {{^}}[[TRITON:[0-9a-f]{64}]]{{$}}
// CHECK-NEXT: {{^}}[[TRITON]]{{$}}
// CHECK-NOT: {{.}}
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-cache-key digest-fresh
// MUTANT: mlir-cache-key digest-constant
// MUTANT: mlir-cache-key add-flag --kernels=keep
