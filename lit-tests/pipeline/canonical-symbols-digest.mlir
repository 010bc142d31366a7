// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest{canonical-symbols=true})' %data/symbols/clip.a.mlir | grep -o 'cache_key.digest = "[0-9a-f]*"' > %t.a
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest{canonical-symbols=true})' %data/symbols/clip.b.mlir | grep -o 'cache_key.digest = "[0-9a-f]*"' > %t.b
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest{canonical-symbols=true})' %data/symbols/clip.c.mlir | grep -o 'cache_key.digest = "[0-9a-f]*"' > %t.c
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/symbols/clip.a.mlir | grep -o 'cache_key.digest = "[0-9a-f]*"' > %t.default.a
// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' %data/symbols/clip.b.mlir | grep -o 'cache_key.digest = "[0-9a-f]*"' > %t.default.b
// RUN: FileCheck %s --input-file=%t.a
// RUN: diff %t.a %t.b
// RUN: not diff %t.a %t.c
// RUN: not diff %t.default.a %t.default.b

// Two JAX traces whose private function is @clip_fn_0 in one and @clip_fn_1
// in the other (JAX issue 38828) share a digest with canonical-symbols; a
// program calling a different private function (c) does not, and the default
// mode, which keeps JAX's names, keeps the two traces apart.

// CHECK: cache_key.digest = "{{[0-9a-f]+}}"

// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt drop-option canonical-symbols
// MUTANT: mlir-opt add-option canonical-symbols=true
// MUTANT: mlir-opt digest-constant
// MUTANT: mlir-opt digest-fresh
