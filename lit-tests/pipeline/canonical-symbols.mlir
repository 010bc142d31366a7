// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize{canonical-symbols=true})' %data/symbols/clip.b.mlir | FileCheck %s
// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize)' %data/symbols/clip.b.mlir | FileCheck %s --check-prefix=DEFAULT

// canonical-symbols renames private functions in order of first reference
// from the public @main, and every call follows; the default keeps JAX's
// names (@clip_fn, @clip_fn_1).

// CHECK-LABEL: func.func public @main
// CHECK: call @private_0({{.*}}) : (tensor<4xf32>)
// CHECK: call @private_1({{.*}}) : (tensor<3xf32>)
// CHECK: func.func private @private_0({{.*}}tensor<4xf32>
// CHECK: func.func private @private_1({{.*}}tensor<3xf32>
// CHECK-NOT: clip_fn

// DEFAULT-LABEL: func.func public @main
// DEFAULT: call @clip_fn(
// DEFAULT: call @clip_fn_1(

// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt drop-option canonical-symbols
// MUTANT: mlir-opt add-option canonical-symbols=true
// MUTANT: mlir-opt sub1 '@private_1\(' '@clip_fn_1('
