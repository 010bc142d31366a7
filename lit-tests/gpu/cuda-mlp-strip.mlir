// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize)' --mlir-print-debuginfo %data/corpus/gpu/cuda_mlp.b.generic.mlir | FileCheck %s

// A CUDA module loses every location, arguments included.

// CHECK-NOT: .py
// CHECK-LABEL: func.func public @main
// CHECK-SAME: loc(unknown)
// CHECK-NOT: .py
