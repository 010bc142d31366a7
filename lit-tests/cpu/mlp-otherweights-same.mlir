// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/corpus/cpu/mlp.a.generic.mlir > %t.a
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/corpus/cpu/mlp.a_otherweights.generic.mlir > %t.b
// RUN: cat %t.a %t.b | FileCheck %s

// Lowering with other argument values gives the same module: one digest.

// CHECK: cache_key.digest = "[[DIGEST:[0-9a-f]+]]"
// CHECK: cache_key.digest = "[[DIGEST]]"
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt digest-fresh
