// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize{kernels=keep})' %data/corpus/tpu/tpu_pallas_add.a.generic.mlir | FileCheck %s

// kernels=keep: the backend_config string is left exactly as the producer
// wrote it, debug_locations and spaces included.

// CHECK: backend_config = "{\22custom_call_config\22: {\22body\22: \22TUzvUg
// CHECK-SAME: \22debug_locations\22: \22TUzvUg
