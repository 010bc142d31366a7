// Smoke test of the shim without Rust: parse with located diagnostics, strip
// debug info, write bytecode with a fixed producer, and run the registered
// passes through a real pass manager with C++ callbacks.
#include "mlir_cache_key/shim.h"

#include "mlir/CAPI/IR.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include <cstdio>
#include <cstring>
#include <string>

namespace {
int failures = 0;

void check(bool ok, const char *what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAIL", what);
  if (!ok)
    ++failures;
}

void append(MlirStringRef s, void *data) {
  static_cast<std::string *>(data)->append(s.data, s.length);
}

int canonicalizeCalls = 0;
MlirLogicalResult onCanonicalize(MlirOperation, const MckPassOptions *options) {
  ++canonicalizeCalls;
  return options->stripKernels ? mlirLogicalResultFailure() : mlirLogicalResultSuccess();
}
MlirLogicalResult onDigest(MlirOperation op, const MckPassOptions *options) {
  mlir::Operation *operation = unwrap(op);
  operation->setAttr("cache_key.digest",
                     mlir::StringAttr::get(operation->getContext(),
                                           options->keepLocations ? "keep" : "strip"));
  return mlirLogicalResultSuccess();
}

MlirStringRef toRef(const std::string &s) { return MlirStringRef{s.data(), s.size()}; }
} // namespace

int main() {
  mlir::MLIRContext context;
  context.allowUnregisteredDialects();
  MlirContext ctx = wrap(&context);

  const std::string good =
      "\"builtin.module\"() <{sym_name = \"m\"}> ({\n"
      "  \"x.op\"() : () -> () loc(\"a.py\":3:4)\n"
      "}) : () -> ()\n";
  std::string diagnostics;
  MlirModule module = mckParseModule(ctx, toRef(good), toRef("good.mlir"), append, &diagnostics);
  check(module.ptr != nullptr && diagnostics.empty(), "parses a generic module");

  std::string bad = "\"builtin.module\"() ({\n  %0 = \n";
  std::string badDiagnostics;
  MlirModule broken = mckParseModule(ctx, toRef(bad), toRef("bad.mlir"), append, &badDiagnostics);
  check(broken.ptr == nullptr, "rejects a broken module");
  check(badDiagnostics.find("bad.mlir:") != std::string::npos, "diagnostics name the input");

  MlirOperation op = wrap(unwrap(module).getOperation());
  MckWalk *walk = mckWalk(op, /*strip=*/true, /*save=*/false);
  size_t customCalls = 1;
  mckWalkCustomCalls(walk, &customCalls);
  check(customCalls == 0, "the walk finds no custom call");
  check(mckWalkFinish(walk), "the walk finishes");
  check(mckWalksOnThisThread() == 1, "one walk counted");
  std::string text;
  {
    llvm::raw_string_ostream os(text);
    unwrap(op)->print(os, mlir::OpPrintingFlags().enableDebugInfo());
  }
  check(text.find("a.py") == std::string::npos, "locations are gone");

  std::string bytes;
  check(mlirLogicalResultIsSuccess(mckWriteBytecode(op, 6, toRef("smoke/1"), append, &bytes)),
        "writes bytecode v6");
  const char header[] = "ML\xEFR\x0dsmoke/1";
  check(bytes.compare(0, sizeof(header), std::string(header, sizeof(header))) == 0,
        "header has the version and the fixed producer");

  mckRegisterPasses(onCanonicalize, onDigest);
  mckRegisterPasses(onCanonicalize, onDigest); // idempotent
  mlir::PassManager pm(&context);
  check(mlir::succeeded(mlir::parsePassPipeline(
            "cache-key-canonicalize{kernels=keep},cache-key-digest{keep-locations=true}",
            pm)),
        "pipeline with both passes and options parses");
  check(mlir::succeeded(pm.run(unwrap(op))), "pipeline runs");
  check(canonicalizeCalls == 1, "canonicalize callback ran once");
  auto digest = unwrap(op)->getAttrOfType<mlir::StringAttr>("cache_key.digest");
  check(digest && digest.getValue() == "keep", "digest callback saw its options");

  mlir::OwningOpRef<mlir::ModuleOp> owned(mlir::cast<mlir::ModuleOp>(unwrap(op)));
  return failures == 0 ? 0 : 1;
}
