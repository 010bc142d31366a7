// RUN: %mck canon --emit text %data/corpus/gpu/cuda_mlp.a.generic.mlir | FileCheck %s '--implicit-check-not=loc('
// RUN: %mck canon --emit text --keep-locations %data/corpus/gpu/cuda_mlp.a.generic.mlir | FileCheck %s --check-prefix=KEEP
// --emit text prints the canonical module in generic form, location-free:
// no `loc(` anywhere, before, inside or after the module.
// CHECK: "builtin.module"() <{sym_name = "jit_mlp"}> ({
// CHECK: "func.func"() <{
// CHECK-SAME: sym_name = "main"
// With --keep-locations the locations are part of the canonical bytes, and
// the text prints each one inline after its block argument or operation.
// KEEP: "builtin.module"() <{sym_name = "jit_mlp"}> ({
// KEEP: ^bb0(%{{[a-z0-9]+}}: tensor<16x32xf32> loc("params[0][0]"),
// KEEP: "stablehlo.dot_general"
// KEEP-SAME: loc("jit(mlp)/dot_general"(callsite("mlp"("/opt/ml/jaxproj/corpus_src/variant_a/models.py":12:24 to :29)
// KEEP: }) : () -> () loc(unknown)
// KEEP-NOT: #loc
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-cache-key prepend '#loc1 = loc("/opt/ml/jaxproj/gen.py":1:1)'
// MUTANT: mlir-cache-key sub1 '(sym_name = "main".*)\n' '\1 loc("/opt/ml/jaxproj/mlp.py":2:3)\n'
// MUTANT: mlir-cache-key append '#loc9 = loc("/opt/ml/jaxproj/mlp.py":9:1)'
// MUTANT: mlir-cache-key drop-option keep-locations
// MUTANT: mlir-cache-key sub 'variant_a/models.py":12:24' 'variant_a/models.py":12:25'
