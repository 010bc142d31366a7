// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize)' %data/corpus/tpu/tpu_pallas_add.a.generic.mlir > %t.out
// RUN: FileCheck %s --implicit-check-not=debug_locations < %t.out
// RUN: %extract-mosaic-body < %data/corpus/tpu/tpu_pallas_add.a.generic.mlir > %t.body.in
// RUN: %extract-mosaic-body < %t.out > %t.body.out
// RUN: FileCheck %s --check-prefix=BODY < %t.body.out
// RUN: diff %t.body.in %t.body.out
// Mosaic default producer mode: `debug_locations` is deleted from
// custom_call_config (it appears nowhere in the output) and the JSON is
// written back minified, in the producer's key order, with the kernel body
// untouched (the same base64 text as in the input).
// CHECK-LABEL: func.func public @main
// CHECK: "stablehlo.custom_call"
// CHECK-SAME: backend_config = "{\22custom_call_config\22:{\22body\22:\22TUzvUgFNTElSMjQuMC4wZ2l0AAElCQEDBQcBAwkDEQsNDxETFRcZA2dDEQE9
// CHECK-SAME: \22,\22serialization_format\22:1,\22needs_layout_passes\22:true}}"
// CHECK-SAME: call_target_name = "tpu_custom_call"
// BODY: {{^TUzvUg[A-Za-z0-9+/=]+$}}
// BODY-NOT: {{.}}
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt add-option kernels=keep
// MUTANT: mlir-opt sub1 '\\22,\\22serialization_format' '\\22,\\22debug_locations\\22:\\22TUzvUg\\22,\\22serialization_format'
// MUTANT: mlir-opt sub1 '(\\22body\\22:\\22TUzvUg)' '\1AAAA'
