// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize)' %data/corpus/cpu/custom_partitioning.a.generic.mlir | FileCheck %s

// Without ignore-custom-partitioning, the process address stays (as in JAX's
// default): two runs would not share a key.

// CHECK: "stablehlo.custom_call"
// CHECK-SAME: backend_config = "139817292648560"
// CHECK-SAME: call_target_name = "CustomSPMDPartitioning"
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt add-option ignore-custom-partitioning=true
