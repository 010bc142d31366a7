// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/corpus/cpu/scan_loop.a.generic.mlir > %t.once
// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize,cache-key-canonicalize,cache-key-digest)' %data/corpus/cpu/scan_loop.a.generic.mlir > %t.twice
// RUN: cat %t.once %t.twice | FileCheck %s

// Canonicalising a canonical module changes nothing.

// CHECK: cache_key.digest = "[[DIGEST:[0-9a-f]+]]"
// CHECK: cache_key.digest = "[[DIGEST]]"
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt digest-fresh
