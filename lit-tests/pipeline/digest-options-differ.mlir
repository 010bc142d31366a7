// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/corpus/tpu/tpu_pallas_add.a.generic.mlir | %extract-digest > %t.default
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest{keep-locations=true})' %data/corpus/tpu/tpu_pallas_add.a.generic.mlir | %extract-digest > %t.keep
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest{kernels=keep})' %data/corpus/tpu/tpu_pallas_add.a.generic.mlir | %extract-digest > %t.kernels
// RUN: cat %t.default %t.keep %t.kernels | FileCheck %s
// RUN: not diff %t.default %t.keep
// RUN: not diff %t.default %t.kernels
// RUN: not diff %t.keep %t.kernels
// Each option that changes canonical bytes changes the digest: one digest
// per run, pairwise different.
// CHECK: {{^[0-9a-f]{64}$}}
// CHECK-NEXT: {{^[0-9a-f]{64}$}}
// CHECK-NEXT: {{^[0-9a-f]{64}$}}
// CHECK-NOT: {{.}}
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt digest-constant
// MUTANT: mlir-opt drop-option keep-locations
// MUTANT: mlir-opt drop-option kernels
