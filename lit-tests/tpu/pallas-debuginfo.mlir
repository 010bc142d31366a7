// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize)' --mlir-print-debuginfo --mlir-print-local-scope %data/corpus/tpu/tpu_pallas_add.nounzip.b.generic.mlir | FileCheck %s '--implicit-check-not={{loc\([^u]}}' --implicit-check-not=.py
// --mlir-print-debuginfo (inline, local scope) confirms no location survives
// in a TPU module with an in-body Pallas kernel: anything but loc(unknown)
// fails the test.
// CHECK: %arg0: tensor<256x256xf32> loc(unknown)
// CHECK: "stablehlo.custom_call"
// CHECK-SAME: call_target_name = "tpu_custom_call"
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt drop-pass cache-key-canonicalize
// MUTANT: mlir-opt sub1 '(%arg1: tensor<256x256xf32>) loc\(unknown\)' '\1 loc("y")'
