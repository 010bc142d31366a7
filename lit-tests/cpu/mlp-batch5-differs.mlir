// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/corpus/cpu/mlp.a.generic.mlir | %extract-digest > %t.a
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/corpus/cpu/mlp.a_batch5.generic.mlir | %extract-digest > %t.b
// RUN: cat %t.a %t.b | FileCheck %s
// RUN: not diff %t.a %t.b
// Batch 5 instead of 4 is another program: one digest each, and they differ.
// CHECK: {{^[0-9a-f]{64}$}}
// CHECK-NEXT: {{^[0-9a-f]{64}$}}
// CHECK-NOT: {{.}}
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt digest-constant
// MUTANT: mlir-opt drop-pass cache-key-digest
