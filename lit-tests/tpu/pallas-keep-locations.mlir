// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize{keep-locations=true})' --mlir-print-debuginfo %data/corpus/tpu/tpu_pallas_add.b.generic.mlir | FileCheck %s

// keep-locations=true skips kernel stripping too (JAX's
// include_metadata_in_key keeps the whole module as written).

// CHECK: \22debug_locations\22:
// CHECK: loc("{{.*}}kernels_b{{.*}}pk.py"
