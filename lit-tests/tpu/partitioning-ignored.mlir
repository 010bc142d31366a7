// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize{ignore-custom-partitioning=true})' %data/corpus/cpu/custom_partitioning.a.generic.mlir | FileCheck %s --implicit-check-not=139817292648560
// ignore-custom-partitioning=true replaces the address by "REMOVED": the
// address appears nowhere in the output.
// CHECK: "stablehlo.custom_call"
// CHECK-SAME: backend_config = "REMOVED"
// CHECK-SAME: call_target_name = "CustomSPMDPartitioning"
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt drop-option ignore-custom-partitioning
// MUTANT: mlir-opt sub1 'api_version = 2 : i32, ' 'api_version = 2 : i32, address = "139817292648560", '
