// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize{kernels=keep})' --mlir-print-debuginfo --mlir-print-local-scope %data/corpus/gpu/cuda_pallas_triton_add.a.generic.mlir > %t.out
// RUN: FileCheck %s '--implicit-check-not={{loc\([^u]}}' < %t.out
// RUN: grep -o 'ir = "[^"]*"' %data/corpus/gpu/cuda_pallas_triton_add.a.generic.mlir > %t.ir.in
// RUN: grep -o 'ir = "[^"]*"' %t.out > %t.ir.out
// RUN: diff %t.ir.in %t.ir.out
// kernels=keep leaves the Triton bytecode byte-identical (its source path
// included: the `ir` strings of input and output are the same text) while
// the module's own locations are still stripped (printed inline, every one
// loc(unknown)).
// CHECK: ir = "ML\EFR
// CHECK-SAME: /opt/ml/jaxproj/corpus_src/kernels_a/pk.py
// CHECK: return {{.*}} loc(unknown)
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt drop-option kernels
// MUTANT: mlir-opt add-option keep-locations=true
// MUTANT: mlir-opt sub1 '(ir = "ML\\EFR[^"]*)add_kernel' '\1add_kernex'
