// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize)' --mlir-print-debuginfo --mlir-print-local-scope %data/corpus/gpu/cuda_mlp.b.generic.mlir | FileCheck %s '--implicit-check-not={{loc\([^u]}}' --implicit-check-not=.py
// A CUDA module loses every location, arguments included: locations are
// printed inline and any location but loc(unknown) fails the test.
// CHECK-LABEL: func.func public @main
// CHECK-SAME: loc(unknown)
// CHECK: return
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt drop-pass cache-key-canonicalize
// MUTANT: mlir-opt sub1 '(%arg1: tensor<32xf32>) loc\(unknown\)' '\1 loc("params[0][1]")'
