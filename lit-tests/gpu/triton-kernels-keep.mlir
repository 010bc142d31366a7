// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize{kernels=keep})' %data/corpus/gpu/cuda_pallas_triton_add.a.generic.mlir | FileCheck %s

// kernels=keep leaves the Triton bytecode byte-identical (its source path
// included) while the module's own locations are still stripped.

// CHECK: ir = "ML\EFR
// CHECK-SAME: /opt/ml/jaxproj/corpus_src/kernels_a/pk.py
