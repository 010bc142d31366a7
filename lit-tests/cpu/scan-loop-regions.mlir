// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize)' --mlir-print-debuginfo %data/corpus/cpu/scan_loop.a.generic.mlir | FileCheck %s

// Block arguments inside while-loop regions lose their locations too, and the
// loops keep their structure.

// CHECK-NOT: .py
// CHECK: "stablehlo.while"
// CHECK: ^bb0(%{{.*}}: tensor<{{.*}}> loc(unknown)
// CHECK: "stablehlo.compare"
// CHECK: "stablehlo.while"
// CHECK-NOT: .py
