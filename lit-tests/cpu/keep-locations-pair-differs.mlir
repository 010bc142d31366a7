// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest{keep-locations=true})' %data/corpus/cpu/mlp.a.generic.mlir | %extract-digest > %t.a
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest{keep-locations=true})' %data/corpus/cpu/mlp.b.generic.mlir | %extract-digest > %t.b
// RUN: cat %t.a %t.b | FileCheck %s
// RUN: not diff %t.a %t.b
// With locations in the key, the relocated twin gets another digest: one
// digest each, and `not diff` proves they differ.
// CHECK: {{^[0-9a-f]{64}$}}
// CHECK-NEXT: {{^[0-9a-f]{64}$}}
// CHECK-NOT: {{.}}
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt digest-constant
// MUTANT: mlir-opt drop-option keep-locations
// MUTANT: mlir-opt drop-pass cache-key-digest
