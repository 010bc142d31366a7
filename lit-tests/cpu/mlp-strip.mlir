// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize)' --mlir-print-debuginfo %data/corpus/cpu/mlp.a.generic.mlir | FileCheck %s

// strip-debuginfo: every operation and block-argument location of a JAX CPU
// module becomes loc(unknown); the program itself is untouched.

// CHECK-NOT: .py
// CHECK: #loc = loc(unknown)
// CHECK-LABEL: module @jit_mlp
// CHECK-LABEL: func.func public @main
// CHECK-SAME: %arg0: tensor<16x32xf32> loc(unknown)
// CHECK: "stablehlo.dot_general"(%arg6, %arg0)
// CHECK-NEXT: "stablehlo.broadcast_in_dim"(%arg1)
// CHECK: call @relu(
// CHECK-LABEL: func.func private @relu(
// CHECK-NOT: .py
