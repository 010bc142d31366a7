/* The C boundary between mlir-cache-key's Rust library and MLIR's C++ API.
 *
 * MLIR's C API cannot set the bytecode producer string, render parse
 * diagnostics against the source buffer, or define a pass with options; these
 * few functions do. Rust reads this header through bindgen (build.rs), so this
 * file is the single source of truth for the FFI boundary. */
#ifndef MLIR_CACHE_KEY_SHIM_H
#define MLIR_CACHE_KEY_SHIM_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Writes `op` as MLIR bytecode of exactly `version` with the producer string
 * `producer`, delivering the bytes to `sink` in chunks of up to 64 KiB (so a
 * caller can hash them without holding a copy). Fails when this MLIR cannot
 * emit `version`. */
MlirLogicalResult mckWriteBytecode(MlirOperation op, int64_t version,
                                   MlirStringRef producer,
                                   MlirStringCallback sink, void *sinkData);

/* Parses MLIR text or bytecode held in `source` into a module. `bufferName`
 * names the input in diagnostics, which are rendered as
 * "NAME:LINE:COL: error: ..." with the source line and delivered to
 * `diagnostics`. Returns a null module on failure. */
MlirModule mckParseModule(MlirContext context, MlirStringRef source,
                          MlirStringRef bufferName,
                          MlirStringCallback diagnostics,
                          void *diagnosticsData);

/* Runs the upstream strip-debuginfo pass on `op` (every operation and block
 * argument location becomes loc(unknown)), with the verifier off: the pass
 * only replaces locations. */
MlirLogicalResult mckStripDebugInfo(MlirOperation op);

/* Renames the private func.func symbols at the top level of the module `op`
 * to private_0, private_1, ... in order of first reference, breadth first
 * from the public symbols (unreferenced ones last, in module order), and
 * updates every symbol reference to them in attributes and properties,
 * nested ones included. Public symbols keep their names. Returns how many were
 * renamed; -1 (module untouched) when a private name is also used as plain
 * text (a string, or opaque attribute text) that renaming would leave stale;
 * -2 when an operation rejected its rewritten properties. */
int64_t mckCanonicalizePrivateSymbols(MlirOperation op);

/* What canonicalization in place changes in the module `root`: every
 * operation's and block argument's location, and all attributes (inherent and
 * discardable) of the `count` operations in `rewritten`. */
typedef struct MckSnapshot MckSnapshot;
MckSnapshot *mckSnapshotTake(MlirOperation root, const MlirOperation *rewritten,
                             size_t count);

/* Puts back what `snapshot` saved and frees it. Returns false when an
 * operation's attributes do not read back exactly as saved. No operation of
 * the snapshot may have been erased since it was taken. */
bool mckSnapshotRestore(MckSnapshot *snapshot);

/* Options of the cache-key passes, as parsed by mlir-opt. */
typedef struct MckPassOptions {
  bool keepLocations;
  bool ignoreCustomPartitioning;
  bool stripKernels;
  bool canonicalSymbols;
} MckPassOptions;

/* A pass body: canonicalizes (or digests) the module `op` in place. Errors are
 * reported as MLIR diagnostics on `op` by the callee. */
typedef MlirLogicalResult (*MckPassCallback)(MlirOperation op,
                                             const MckPassOptions *options);

/* Registers the passes `cache-key-canonicalize` and `cache-key-digest` with
 * MLIR's global pass registry, running `canonicalize` and `digest`. Called
 * from a pass plugin's registration hook; idempotent. */
void mckRegisterPasses(MckPassCallback canonicalize, MckPassCallback digest);

#ifdef __cplusplus
}
#endif

#endif /* MLIR_CACHE_KEY_SHIM_H */
