// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize,canonicalize,cache-key-digest)' --mlir-print-debuginfo %data/corpus/cpu/conv.b.generic.mlir | FileCheck %s

// The passes compose with upstream passes in one pipeline.

// CHECK-NOT: .py
// CHECK: module @jit_conv attributes {cache_key.digest = "{{[0-9a-f]+}}"
// CHECK: "stablehlo.convolution"
