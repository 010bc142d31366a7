// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize{keep-locations=true})' --mlir-print-debuginfo %data/corpus/tpu/tpu_pallas_add.b.generic.mlir > %t.out
// RUN: FileCheck %s < %t.out
// RUN: grep -o 'backend_config = "[^"]*"' %data/corpus/tpu/tpu_pallas_add.b.generic.mlir > %t.config.in
// RUN: grep -o 'backend_config = "[^"]*"' %t.out > %t.config.out
// RUN: diff %t.config.in %t.config.out
// keep-locations=true skips kernel stripping too (JAX's
// include_metadata_in_key keeps the whole module as written): the kernel's
// backend_config is the input's text, and the module keeps its locations.
// CHECK: \22debug_locations\22:
// CHECK: loc("{{.*}}kernels_b{{.*}}pk.py"
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt drop-option keep-locations
// MUTANT: mlir-opt add-option keep-locations=true && sub1 '\\22debug_locations\\22: \\22[A-Za-z0-9+/=]*\\22' '\\22debug_locations\\22: \\22\\22'
// MUTANT: mlir-opt sub 'loc\("[^"]*pk.py"' 'loc("pk"'
