// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/corpus/cpu/scan_loop.a.generic.mlir > %t.a
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/corpus/cpu/scan_loop.b.generic.mlir > %t.b
// RUN: cat %t.a %t.b | FileCheck %s

// lax.scan plus a while loop (regions, block arguments), relocated: one digest.

// CHECK: cache_key.digest = "[[DIGEST:[0-9a-f]+]]"
// CHECK: cache_key.digest = "[[DIGEST]]"
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt digest-fresh
// MUTANT: mlir-opt add-option keep-locations=true
