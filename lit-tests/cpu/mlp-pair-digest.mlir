// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/corpus/cpu/mlp.a.generic.mlir > %t.a
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/corpus/cpu/mlp.b.generic.mlir > %t.b
// RUN: cat %t.a %t.b | FileCheck %s

// mlp.a and mlp.b differ only in debug locations: one digest.

// CHECK: module @jit_mlp attributes {cache_key.digest = "[[DIGEST:[0-9a-f]+]]"
// CHECK: module @jit_mlp attributes {cache_key.digest = "[[DIGEST]]"
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt digest-fresh
// MUTANT: mlir-opt add-option keep-locations=true
