/* The C boundary between mlir-cache-key's Rust library and MLIR's C++ API.
 *
 * MLIR's C API cannot set the bytecode producer string, render parse
 * diagnostics against the source buffer, or define a pass with options; these
 * few functions do, as does the one walk canonicalization makes over a
 * module. Rust reads this header through bindgen (build.rs), so this file is
 * the single source of truth for the FFI boundary. */
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

/* Renames the private func.func symbols at the top level of the module `op`
 * to private_0, private_1, ... in order of first reference, breadth first
 * from the public symbols (unreferenced ones last, in module order), and
 * updates every symbol reference to them in attributes and properties,
 * nested ones included. Public symbols keep their names. Returns how many were
 * renamed; -1 (module untouched) when a private name is also used as plain
 * text (a string, or opaque attribute text) that renaming would leave stale;
 * -2 when an operation rejected its rewritten properties. */
int64_t mckCanonicalizePrivateSymbols(MlirOperation op);

/* A stablehlo.custom_call found by mckWalk: the operation, its index in
 * pre-order among all operations of the walk's root (the root is 0), and its
 * location as it was before the walk. */
typedef struct MckCustomCall {
  MlirOperation op;
  size_t position;
  MlirLocation location;
} MckCustomCall;

/* One pre-order walk of `root`: collects its stablehlo.custom_call ops and,
 * when `strip`, replaces every operation's and block argument's location by
 * loc(unknown) (exactly what upstream strip-debuginfo does, the root
 * included). When `save`, it also saves what canonicalization in place
 * changes: those locations and all attributes (inherent and discardable) of
 * the custom calls, for mckWalkFinish to put back. */
typedef struct MckWalk MckWalk;
MckWalk *mckWalk(MlirOperation root, bool strip, bool save);

/* The custom calls the walk found, in pre-order; `count` receives how many.
 * Valid until mckWalkFinish. */
const MckCustomCall *mckWalkCustomCalls(const MckWalk *walk, size_t *count);

/* Puts back what the walk saved (nothing unless `save`) and frees it. Returns
 * false when an operation's attributes do not read back exactly as saved. No
 * operation the walk saw may have been erased since. */
bool mckWalkFinish(MckWalk *walk);

/* How many times mckWalk ran on the calling thread (for tests that count the
 * walks of one canonicalization). */
uint64_t mckWalksOnThisThread(void);

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
