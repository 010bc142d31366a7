// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize)' %data/corpus/gpu/cuda_pallas_triton_add.a.generic.mlir > %t.out
// RUN: FileCheck %s --implicit-check-not=kernels_a --implicit-check-not=pk.py --implicit-check-not=jaxproj < %t.out
// RUN: grep -o 'ir = "[^"]*"' %data/corpus/gpu/cuda_pallas_triton_add.a.generic.mlir > %t.ir.in
// RUN: grep -o 'ir = "[^"]*"' %t.out > %t.ir.out
// RUN: not diff %t.ir.in %t.ir.out
// The Triton kernel bytecode in mhlo.backend_config's `ir` no longer carries
// the source path of the kernel (nowhere in the output), but keeps its code;
// and the `ir` string did change.
// CHECK: "stablehlo.custom_call"
// CHECK-SAME: call_target_name = "__gpu$xla.gpu.triton"
// CHECK-SAME: mhlo.backend_config = {
// CHECK-SAME: ir = "ML\EFR
// CHECK-SAME: add_kernel
// CHECK-SAME: name = "add_kernel", num_stages = 3 : i32, num_warps = 4 : i32}
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt add-option kernels=keep
// MUTANT: mlir-opt sub1 'num_warps = 4' 'num_warps = 8'
