// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize)' --mlir-print-debuginfo --mlir-print-local-scope %data/corpus/cpu/scan_loop.a.generic.mlir | FileCheck %s '--implicit-check-not={{loc\([^u]}}' --implicit-check-not=.py
// Block arguments inside while-loop regions lose their locations too, and the
// loops keep their structure. Any location but loc(unknown) fails the test.
// CHECK: "stablehlo.while"
// CHECK-NEXT: ^bb0(%arg2: tensor<12x16xf32> loc(unknown), %arg3: tensor<i32> loc(unknown)
// CHECK: "stablehlo.compare"
// CHECK: "stablehlo.reduce"
// CHECK-NEXT: ^bb0(%arg6: tensor<f32> loc(unknown), %arg7: tensor<f32> loc(unknown)):
// CHECK: "stablehlo.while"
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt drop-pass cache-key-canonicalize
// MUTANT: mlir-opt sub1 '(%arg6: tensor<f32>) loc\(unknown\)' '\1 loc("/opt/ml/jaxproj/scan.py":21:7)'
// MUTANT: mlir-opt sub '(\^bb0\(%arg2: tensor<i32>) loc\(unknown\)' '\1 loc("i")'
