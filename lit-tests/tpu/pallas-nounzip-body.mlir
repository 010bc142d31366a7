// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize)' %data/corpus/tpu/tpu_pallas_add.nounzip.a.generic.mlir > %t.out
// RUN: FileCheck %s --implicit-check-not=debug_locations < %t.out
// RUN: %extract-mosaic-body < %data/corpus/tpu/tpu_pallas_add.nounzip.a.generic.mlir > %t.body.in
// RUN: %extract-mosaic-body < %t.out > %t.body.out
// RUN: FileCheck %s --check-prefix=BODY < %t.body.out
// RUN: not diff %t.body.in %t.body.out
// In-body mode: no debug_locations key to drop; the body is re-encoded after
// stripping (its base64 text differs from the input's), the JSON is minified
// and keeps its key order.
// CHECK: backend_config = "{\22custom_call_config\22:{\22body\22:\22TUzvUg
// CHECK-SAME: \22,\22serialization_format\22:1,\22needs_layout_passes\22:true}}"
// BODY: {{^TUzvUg[A-Za-z0-9+/=]+$}}
// BODY-NOT: {{.}}
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt add-option kernels=keep
// MUTANT: mlir-opt add-option kernels=keep && sub '\\22: ' '\\22:' && sub ', \\22' ',\\22'
