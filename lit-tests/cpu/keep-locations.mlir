// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize{keep-locations=true})' --mlir-print-debuginfo %data/corpus/cpu/mlp.a.generic.mlir | FileCheck %s

// keep-locations=true keeps debug info (JAX's include_metadata_in_key).

// CHECK: #loc1 = loc("params[0][0]")
// CHECK: module @jit_mlp
// CHECK-NEXT: func.func public @main
// CHECK-SAME: loc("params[0][0]")
// CHECK: = loc("{{.*}}.py":{{[0-9]+}}:{{[0-9]+}}
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt drop-option keep-locations
// MUTANT: mlir-opt sub1 '(%arg0: tensor<16x32xf32>) loc\([^)]*\)' '\1 loc(unknown)'
