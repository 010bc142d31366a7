// RUN: not %opt --pass-pipeline='builtin.module(cache-key-canonicalize{kernels=squash})' %s 2>&1 | FileCheck %s --check-prefix=BAD-KERNELS
// RUN: not %opt --pass-pipeline='builtin.module(cache-key-canonicalize{no-such-option=1})' %s 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// Pass options are validated by mlir-opt's option parser.

// BAD-KERNELS: for the --kernels option: Cannot find option named 'squash'!
// UNKNOWN: no such option no-such-option
module {
}
//
// Wrong outputs this test rejects (scripts/lit-mutants.sh):
// MUTANT: mlir-opt drop-option kernels
// MUTANT: mlir-opt drop-option no-such-option
