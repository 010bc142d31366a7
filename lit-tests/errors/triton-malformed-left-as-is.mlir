// RUN: %opt --split-input-file --pass-pipeline='builtin.module(cache-key-canonicalize)' %s | FileCheck %s

// JAX accepts Triton calls of any shape, so a Triton call we cannot read is
// left exactly as it is (a possible miss, never a failure or a false hit).

// CHECK-LABEL: func.func @no_dictionary
// CHECK: mhlo.backend_config = "not a dictionary"
"builtin.module"() ({
  "func.func"() <{function_type = () -> (), sym_name = "no_dictionary"}> ({
    "stablehlo.custom_call"() <{backend_config = "", call_target_name = "__gpu$xla.gpu.triton"}> {mhlo.backend_config = "not a dictionary"} : () -> ()
    "func.return"() : () -> ()
  }) : () -> ()
}) : () -> ()

// -----

// CHECK-LABEL: func.func @text_ir
// CHECK: {mhlo.backend_config = {ir = "tt.func @k() { tt.return }", name = "k"}}
"builtin.module"() ({
  "func.func"() <{function_type = () -> (), sym_name = "text_ir"}> ({
    "stablehlo.custom_call"() <{backend_config = "", call_target_name = "__gpu$xla.gpu.triton"}> {mhlo.backend_config = {ir = "tt.func @k() { tt.return }", name = "k"}} : () -> ()
    "func.return"() : () -> ()
  }) : () -> ()
}) : () -> ()

// -----

// CHECK-LABEL: func.func @truncated
// CHECK: {mhlo.backend_config = {ir = "ML\EFR\0DMLIR24", name = "k"}}
"builtin.module"() ({
  "func.func"() <{function_type = () -> (), sym_name = "truncated"}> ({
    "stablehlo.custom_call"() <{backend_config = "", call_target_name = "__gpu$xla.gpu.triton"}> {mhlo.backend_config = {ir = "ML\EFR\0DMLIR24", name = "k"}} : () -> ()
    "func.return"() : () -> ()
  }) : () -> ()
}) : () -> ()
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt exit 1
// MUTANT: mlir-opt sub1 'ir = "tt.func @k\(\) \{ tt.return \}"' 'ir = ""'
// MUTANT: mlir-opt sub1 '\{ir = "ML\\EFR\\0DMLIR24", name = "k"\}' '{ir = "ML\\EFR\\0DMLIR24"}'
