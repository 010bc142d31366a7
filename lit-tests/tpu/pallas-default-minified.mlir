// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize)' %data/corpus/tpu/tpu_pallas_add.a.generic.mlir | FileCheck %s

// Mosaic default producer mode: `debug_locations` is deleted from
// custom_call_config and the JSON is written back minified, in the producer's
// key order, with the kernel body untouched.

// CHECK-LABEL: func.func public @main
// CHECK: "stablehlo.custom_call"
// CHECK-SAME: backend_config = "{\22custom_call_config\22:{\22body\22:\22TUzvUgFNTElSMjQuMC4wZ2l0AAElCQEDBQcBAwkDEQsNDxETFRcZA2dDEQE9
// CHECK-SAME: \22,\22serialization_format\22:1,\22needs_layout_passes\22:true}}"
// CHECK-SAME: call_target_name = "tpu_custom_call"
// CHECK-NOT: debug_locations
