// RUN: %opt --pass-pipeline='builtin.module(cache-key-digest)' --mlir-print-debuginfo %s | FileCheck %s

// cache-key-digest attaches the SHA-256 of the canonical bytecode as a module
// attribute and leaves everything else, locations included, as it was.

// CHECK: module @small attributes {cache_key.digest = "{{[0-9a-f]+}}"}
// CHECK-NEXT: "test.op"() : () -> () loc(#[[LOC:loc[0-9]*]])
// CHECK: #[[LOC]] = loc("here.py":1:2)
"builtin.module"() <{sym_name = "small"}> ({
  "test.op"() : () -> () loc("here.py":1:2)
}) : () -> ()
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt replace-pass cache-key-digest cache-key-canonicalize,cache-key-digest
// MUTANT: mlir-opt drop-pass cache-key-digest
