// RUN: %mck canon --digest %data/corpus/tpu/tpu_pallas_add.b.generic.mlir > %t.cli
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/corpus/tpu/tpu_pallas_add.b.generic.mlir > %t.opt
// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize)' --emit-bytecode --emit-bytecode-version=6 %data/corpus/tpu/tpu_pallas_add.b.generic.mlir -o %t.bc
// RUN: %mck canon --digest %t.bc > %t.recanon
// RUN: cat %t.cli %t.opt %t.recanon | FileCheck %s

// One implementation: the plugin's digest equals the CLI's, and the plugin's
// canonical module, written by mlir-opt, canonicalises to the same bytes.

// CHECK: {{^}}[[DIGEST:[0-9a-f]{64}]]{{$}}
// CHECK-NEXT: cache_key.digest = "[[DIGEST]]"
// CHECK: {{^}}[[DIGEST]]{{$}}
// CHECK-NOT: {{.}}
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt digest-fresh
// MUTANT: mlir-cache-key digest-fresh
// MUTANT: mlir-opt add-option kernels=keep
