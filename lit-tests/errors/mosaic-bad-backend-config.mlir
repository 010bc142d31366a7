// RUN: not %opt --split-input-file --pass-pipeline='builtin.module(cache-key-canonicalize)' %s 2>&1 | FileCheck %s --implicit-check-not=error:

// Malformed Mosaic configs are errors that name the custom call, its
// attribute and the JSON field, never a crash or a silent pass: one error per
// chunk, in chunk order, and no other error. Each is reported at the module's own
// location, taken before canonicalization strips it.

// CHECK: mosaic-bad-backend-config.mlir:{{[0-9]+}}:1: error: cache-key-canonicalize: stablehlo.custom_call #0 (Mosaic kernel, operation #2 in pre-order) at loc({{.*}}): attribute backend_config: not valid JSON: key must be a string at line 1 column 2
"builtin.module"() ({
  "func.func"() <{function_type = () -> (), sym_name = "bad_json"}> ({
    "stablehlo.custom_call"() <{backend_config = "{not json", call_target_name = "tpu_custom_call"}> : () -> ()
    "func.return"() : () -> ()
  }) : () -> ()
}) : () -> ()

// -----

// CHECK: error: {{.*}}: attribute backend_config: JSON has no "custom_call_config" object
"builtin.module"() ({
  "func.func"() <{function_type = () -> (), sym_name = "no_config"}> ({
    "stablehlo.custom_call"() <{backend_config = "{\22custom_call_config\22: [1, 2]}", call_target_name = "tpu_custom_call"}> : () -> ()
    "func.return"() : () -> ()
  }) : () -> ()
}) : () -> ()

// -----

// CHECK: error: {{.*}}: attribute backend_config (JSON custom_call_config.body): invalid base64: Invalid symbol 64, offset 0.
"builtin.module"() ({
  "func.func"() <{function_type = () -> (), sym_name = "bad_base64"}> ({
    "stablehlo.custom_call"() <{backend_config = "{\22custom_call_config\22: {\22body\22: \22@@@@\22}}", call_target_name = "tpu_custom_call"}> : () -> ()
    "func.return"() : () -> ()
  }) : () -> ()
}) : () -> ()

// -----

// CHECK: error: {{.*}}: attribute backend_config (JSON custom_call_config.body): not MLIR bytecode
"builtin.module"() ({
  "func.func"() <{function_type = () -> (), sym_name = "not_bytecode"}> ({
    "stablehlo.custom_call"() <{backend_config = "{\22custom_call_config\22: {\22body\22: \22aGVsbG8=\22}}", call_target_name = "tpu_custom_call"}> : () -> ()
    "func.return"() : () -> ()
  }) : () -> ()
}) : () -> ()

// -----

// CHECK: error: {{.*}}: attribute backend_config: not a string attribute
"builtin.module"() ({
  "func.func"() <{function_type = () -> (), sym_name = "not_string"}> ({
    "stablehlo.custom_call"() <{backend_config = {a = 1 : i32}, call_target_name = "tpu_custom_call"}> : () -> ()
    "func.return"() : () -> ()
  }) : () -> ()
}) : () -> ()

// -----

// CHECK: error: {{.*}}: attribute backend_config (JSON custom_call_config.body): missing, or not a string
"builtin.module"() ({
  "func.func"() <{function_type = () -> (), sym_name = "no_body"}> ({
    "stablehlo.custom_call"() <{backend_config = "{\22custom_call_config\22: {\22body\22: 42}}", call_target_name = "tpu_custom_call"}> : () -> ()
    "func.return"() : () -> ()
  }) : () -> ()
}) : () -> ()
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt exit 0
// MUTANT: mlir-opt sub1 'mosaic-bad-backend-config.mlir:[0-9]+:1: error' 'loc(unknown): error'
// MUTANT: mlir-opt sub1 'operation #2 in pre-order' 'operation #1 in pre-order'
// MUTANT: mlir-opt sub1 'not MLIR bytecode' 'invalid base64'
// MUTANT: mlir-opt sub1 '(error: [^\n]*not valid JSON[^\n]*\n)' '\1\1'
