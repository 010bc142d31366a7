// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest{ignore-custom-partitioning=true})' %data/corpus/cpu/custom_partitioning.a.generic.mlir | %extract-digest > %t.a
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest{ignore-custom-partitioning=true})' %data/corpus/cpu/custom_partitioning.a_otherpointer.generic.mlir | %extract-digest > %t.b
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/corpus/cpu/custom_partitioning.a.generic.mlir | %extract-digest > %t.c
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/corpus/cpu/custom_partitioning.a_otherpointer.generic.mlir | %extract-digest > %t.d
// RUN: cat %t.a %t.b %t.c %t.d | FileCheck %s
// RUN: not diff %t.c %t.d
// Two process addresses: one digest with the option (IGNORED pair equal),
// two without (DEFAULT pair compared with `not diff`).
// CHECK: {{^}}[[IGNORED:[0-9a-f]{64}]]{{$}}
// CHECK-NEXT: {{^}}[[IGNORED]]{{$}}
// CHECK-NEXT: {{^[0-9a-f]{64}$}}
// CHECK-NEXT: {{^[0-9a-f]{64}$}}
// CHECK-NOT: {{.}}
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt digest-constant
// MUTANT: mlir-opt digest-fresh
// MUTANT: mlir-opt drop-option ignore-custom-partitioning
// MUTANT: mlir-opt add-option ignore-custom-partitioning=true
