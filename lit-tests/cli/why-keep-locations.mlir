// RUN: %mck why --keep-locations %data/corpus/cpu/mlp.a.generic.mlir %data/corpus/cpu/mlp.b.generic.mlir | FileCheck %s
// RUN: %mck why %data/corpus/cpu/mlp.a.generic.mlir %data/corpus/cpu/mlp.a_batch5.generic.mlir | FileCheck %s --check-prefix=CODE '--implicit-check-not=location'
// With locations in the key, `why` names the location that moved (the file
// position that differs, then the whole location), not "the bytecode
// differs"; a change of code is never reported as a moved location.
// CHECK: first difference: entry 1 "computation"
// CHECK-NEXT: only debug locations differ (15 lines of canonical text); the code is the same
// CHECK-NEXT: first differing operation at canonical line 4, in function @main
// CHECK-NEXT: location moved: "/opt/ml/jaxproj/corpus_src/variant_a/models.py":12:24 to :29 → "/opt/ml/jaxproj/corpus_src/variant_b/moved/deeper/models.py":50:24 to :29
// CHECK-NEXT: in full: loc("jit(mlp)/dot_general"(callsite("mlp"("/opt/ml/jaxproj/corpus_src/variant_a/models.py":12:24 to :29)
// CHECK-NOT: bytecode differs
// CODE: first difference: entry 1 "computation"
// CODE-NEXT: first differing operation at canonical line 2, in function @main
// CODE-NEXT: at column {{[0-9]+}}: {{.*}}tensor<4x16xf32>{{.*}} → {{.*}}tensor<5x16xf32>
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-cache-key drop-option keep-locations
// MUTANT: mlir-cache-key sub 'location moved: [^\n]*' 'the bytecode differs (different MLIR versions?)'
// MUTANT: mlir-cache-key sub1 'only debug locations differ \(15' 'only debug locations differ (14'
// MUTANT: mlir-cache-key sub1 'at column (\d+): ([^\n]*)' 'location moved: \2'
