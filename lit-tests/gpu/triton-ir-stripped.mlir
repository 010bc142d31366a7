// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize)' %data/corpus/gpu/cuda_pallas_triton_add.a.generic.mlir | FileCheck %s

// The Triton kernel bytecode in mhlo.backend_config's `ir` no longer carries
// the source path of the kernel, but keeps its code.

// CHECK: "stablehlo.custom_call"
// CHECK-SAME: call_target_name = "__gpu$xla.gpu.triton"
// CHECK-SAME: mhlo.backend_config = {
// CHECK-SAME: ir = "ML\EFR
// CHECK-NOT: kernels_a/pk.py
// CHECK-SAME: add_kernel
// CHECK-SAME: num_warps = 4
