// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize{kernels=keep})' %data/corpus/tpu/tpu_pallas_add.a.generic.mlir > %t.out
// RUN: FileCheck %s < %t.out
// RUN: grep -o 'backend_config = "[^"]*"' %data/corpus/tpu/tpu_pallas_add.a.generic.mlir > %t.config.in
// RUN: grep -o 'backend_config = "[^"]*"' %t.out > %t.config.out
// RUN: diff %t.config.in %t.config.out
// kernels=keep: the backend_config string is left exactly as the producer
// wrote it (the same text as in the input), debug_locations and spaces
// included.
// CHECK: backend_config = "{\22custom_call_config\22: {\22body\22: \22TUzvUg
// CHECK-SAME: \22debug_locations\22: \22TUzvUg
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt drop-option kernels
// MUTANT: mlir-opt sub1 '(\\22debug_locations\\22: \\22TUzvUg)' '\1AAAA'
