// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize)' %data/corpus/tpu/tpu_pallas_add.nounzip.a.generic.mlir | FileCheck %s

// In-body mode: no debug_locations key to drop; the body is re-encoded after
// stripping, the JSON is minified and keeps its key order.

// CHECK: backend_config = "{\22custom_call_config\22:{\22body\22:\22TUzvUg
// CHECK-SAME: \22,\22serialization_format\22:1,\22needs_layout_passes\22:true}}"
// CHECK-NOT: debug_locations
