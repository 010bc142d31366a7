// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize,canonicalize,cache-key-digest)' --mlir-print-debuginfo --mlir-print-local-scope %data/corpus/cpu/conv.b.generic.mlir | FileCheck %s '--implicit-check-not={{loc\([^u]}}' --implicit-check-not=.py
// The passes compose with upstream passes in one pipeline. Locations are
// printed inline (mlir-opt would print location aliases after the module),
// and any location but loc(unknown), anywhere, fails the test.
// CHECK: module @jit_conv attributes {cache_key.digest = {{"[0-9a-f]{64}"}}
// CHECK: "stablehlo.convolution"
// CHECK: } loc(unknown)
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt drop-pass cache-key-canonicalize
// MUTANT: mlir-opt drop-pass cache-key-digest
// MUTANT: mlir-opt append '#loc9 = loc("/opt/ml/jaxproj/conv.py":3:1)'
