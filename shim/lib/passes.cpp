// The two mlir-opt passes. Each body calls back into the library (through the
// callbacks registered by the plugin), so mlir-opt, the CLI and the library
// run one implementation; this file only declares names and options.
#include "mlir_cache_key/shim.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

namespace {
MckPassCallback canonicalizeCallback = nullptr;
MckPassCallback digestCallback = nullptr;

enum class KernelMode { Strip, Keep };

// Options shared by both passes; CRTP gives each pass its own TypeID.
template <typename Derived>
struct CacheKeyPassBase
    : public mlir::PassWrapper<Derived,
                               mlir::OperationPass<mlir::ModuleOp>> {
  CacheKeyPassBase() = default;
  CacheKeyPassBase(const CacheKeyPassBase &other)
      : mlir::PassWrapper<Derived, mlir::OperationPass<mlir::ModuleOp>>(
            other) {}

  mlir::Pass::Option<bool> keepLocations{
      *this, "keep-locations",
      llvm::cl::desc("Keep debug locations (skip strip-debuginfo and kernel "
                     "stripping), like jax_compilation_cache_include_metadata_in_key"),
      llvm::cl::init(false)};
  mlir::Pass::Option<bool> ignoreCustomPartitioning{
      *this, "ignore-custom-partitioning",
      llvm::cl::desc("Replace the process address in CustomSPMDPartitioning "
                     "custom calls by \"REMOVED\""),
      llvm::cl::init(false)};
  mlir::Pass::Option<bool> canonicalSymbols{
      *this, "canonical-symbols",
      llvm::cl::desc("Rename private func.func symbols in order of first "
                     "reference from the public ones (not JAX-compatible)"),
      llvm::cl::init(false)};
  mlir::Pass::Option<KernelMode> kernels{
      *this, "kernels",
      llvm::cl::desc("What to do with kernels embedded in custom calls"),
      llvm::cl::init(KernelMode::Strip),
      llvm::cl::values(
          clEnumValN(KernelMode::Strip, "strip",
                     "strip debug info from Mosaic and Triton kernels"),
          clEnumValN(KernelMode::Keep, "keep", "leave kernels as they are"))};

  MckPassOptions options() const {
    return MckPassOptions{keepLocations, ignoreCustomPartitioning,
                          kernels == KernelMode::Strip, canonicalSymbols};
  }

  void runWith(MckPassCallback callback) {
    if (!callback) {
      this->getOperation()->emitError(
          "mlir-cache-key: pass callbacks were not registered");
      return this->signalPassFailure();
    }
    MckPassOptions opts = options();
    if (mlirLogicalResultIsFailure(callback(wrap(this->getOperation().getOperation()), &opts)))
      this->signalPassFailure();
  }
};

struct CanonicalizePass : CacheKeyPassBase<CanonicalizePass> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CanonicalizePass)
  llvm::StringRef getArgument() const final { return "cache-key-canonicalize"; }
  llvm::StringRef getDescription() const final {
    return "Canonicalize a module for compilation-cache keys: strip debug "
           "info, strip embedded Mosaic/Triton kernels, neutralize unstable "
           "pointers";
  }
  void runOnOperation() final { runWith(canonicalizeCallback); }
};

struct DigestPass : CacheKeyPassBase<DigestPass> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(DigestPass)
  llvm::StringRef getArgument() const final { return "cache-key-digest"; }
  llvm::StringRef getDescription() const final {
    return "Attach the SHA-256 of the module's canonical bytecode as the "
           "module attribute cache_key.digest";
  }
  void runOnOperation() final { runWith(digestCallback); }
};
} // namespace

void mckRegisterPasses(MckPassCallback canonicalize, MckPassCallback digest) {
  canonicalizeCallback = canonicalize;
  digestCallback = digest;
  static bool registered = false;
  if (registered)
    return;
  registered = true;
  mlir::PassRegistration<CanonicalizePass>();
  mlir::PassRegistration<DigestPass>();
}
