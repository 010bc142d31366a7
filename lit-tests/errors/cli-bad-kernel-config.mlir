// RUN: not %mck canon %s 2>&1 | FileCheck %s

// The CLI reports a malformed Mosaic config with the custom call's position
// and exits non-zero.

// CHECK: mlir-cache-key: error: stablehlo.custom_call #1 (Mosaic kernel, operation #3 in pre-order) at loc({{.*}}cli-bad-kernel-config.mlir":{{[0-9]+}}:{{[0-9]+}}): attribute backend_config: not valid JSON
"builtin.module"() ({
  "func.func"() <{function_type = () -> (), sym_name = "main"}> ({
    "stablehlo.custom_call"() <{backend_config = "", call_target_name = "something_else"}> : () -> ()
    "stablehlo.custom_call"() <{backend_config = "[1,", call_target_name = "tpu_custom_call"}> : () -> ()
    "func.return"() : () -> ()
  }) : () -> ()
}) : () -> ()
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-cache-key exit 0
// MUTANT: mlir-cache-key sub1 'operation #3' 'operation #4'
