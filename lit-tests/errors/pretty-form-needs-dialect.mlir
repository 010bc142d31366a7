// RUN: not %mck canon %data/corpus/cpu/mlp.a.mlir 2>&1 | FileCheck %s

// The pretty form of a dialect MLIR 22 lacks cannot be parsed: the CLI says
// where, and how to get the generic form.

// CHECK: mlir-cache-key: error: cannot parse {{.*}}mlp.a.mlir:
// CHECK-NEXT: mlp.a.mlir:11:10: error: Dialect `stablehlo' not found for custom op 'stablehlo.dot_general'
// CHECK: hint: 'stablehlo.dot_general' is in the pretty (custom) form
// CHECK-SAME: print_generic_op_form=True
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-cache-key exit 0
// MUTANT: mlir-cache-key sub 'hint: [^\n]*' ''
// MUTANT: mlir-cache-key sub1 'mlp.a.mlir:11:10' 'mlp.a.mlir:1:1'
