// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize)' --mlir-print-debuginfo --mlir-print-local-scope %data/corpus/cpu/mlp.a.generic.mlir | FileCheck %s '--implicit-check-not={{loc\([^u]}}' --implicit-check-not=.py
// strip-debuginfo: every operation and block-argument location of a JAX CPU
// module becomes loc(unknown); the program itself is untouched. Locations are
// printed inline (local scope), and any location but loc(unknown), anywhere
// in the output, fails the test.
// CHECK-LABEL: module @jit_mlp
// CHECK-LABEL: func.func public @main
// CHECK-SAME: %arg0: tensor<16x32xf32> loc(unknown)
// CHECK: "stablehlo.dot_general"(%arg6, %arg0)
// CHECK-NEXT: "stablehlo.broadcast_in_dim"(%arg1)
// CHECK: call @relu(
// CHECK-LABEL: func.func private @relu(
// CHECK: } loc(unknown)
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt drop-pass cache-key-canonicalize
// MUTANT: mlir-opt sub1 '("stablehlo.add"\(%5, %7\).*) loc\(unknown\)' '\1 loc("/opt/ml/jaxproj/mlp.py":12:5)'
// MUTANT: mlir-opt sub1 '(%arg3: tensor<32xf32>) loc\(unknown\)' '\1 loc("params[1][1]")'
// MUTANT: mlir-opt sub1 '(\} loc\(unknown\)\n\}) loc\(unknown\)' '\1 loc(callsite("f"(unknown) at unknown))'
