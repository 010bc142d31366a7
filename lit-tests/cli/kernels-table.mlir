// RUN: %mck kernels %data/corpus/tpu/tpu_pallas_add.a.generic.mlir | FileCheck %s --check-prefix=DEFAULT
// RUN: %mck kernels %data/corpus/tpu/tpu_pallas_add.nounzip.a.generic.mlir | FileCheck %s --check-prefix=INBODY
// RUN: %mck kernels %data/corpus/cpu/mlp.a.generic.mlir | FileCheck %s --check-prefix=NONE

// `kernels` lists each embedded kernel with its header and what was done.

// DEFAULT: call   kind      version producer             bytes  action
// DEFAULT-NEXT: #0     mosaic    0       MLIR24.0.0git          790  dropped debug_locations (body untouched)
// DEFAULT-NEXT: operation #2 at loc(

// INBODY: #0     mosaic    0       MLIR24.0.0git         1073  stripped (container)

// NONE: no embedded kernels
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-cache-key add-flag --kernels=keep
// MUTANT: mlir-cache-key sub1 'operation #2' 'operation #3'
// MUTANT: mlir-cache-key sub1 'stripped \(container\)' 'left as is'
