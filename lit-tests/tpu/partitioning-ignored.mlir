// RUN: %opt --pass-pipeline='builtin.module(cache-key-canonicalize{ignore-custom-partitioning=true})' %data/corpus/cpu/custom_partitioning.a.generic.mlir | FileCheck %s

// ignore-custom-partitioning=true replaces the address by "REMOVED".

// CHECK: "stablehlo.custom_call"
// CHECK-SAME: backend_config = "REMOVED"
// CHECK-SAME: call_target_name = "CustomSPMDPartitioning"
// CHECK-NOT: 139817292648560
