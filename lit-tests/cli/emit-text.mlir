// RUN: %mck canon --emit text %data/corpus/gpu/cuda_mlp.a.generic.mlir | FileCheck %s

// --emit text prints the canonical module in generic form, location-free.

// CHECK: "builtin.module"() <{sym_name = "jit_mlp"}> ({
// CHECK: "func.func"() <{
// CHECK-SAME: sym_name = "main"
// CHECK-NOT: loc(
