// Parsing with diagnostics rendered against the source buffer, the way
// mlir-opt prints them ("NAME:LINE:COL: error: ..." plus the source line); the
// C API's parser only reports through unlocated context diagnostics.
#include "mlir_cache_key/shim.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

MlirModule mckParseModule(MlirContext context, MlirStringRef source,
                          MlirStringRef bufferName,
                          MlirStringCallback diagnostics,
                          void *diagnosticsData) {
  mlir::MLIRContext *ctx = unwrap(context);
  llvm::SourceMgr sourceMgr;
  // No copy of the input: the caller keeps `source` alive across this call.
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBuffer(unwrap(source), unwrap(bufferName),
                                       /*RequiresNullTerminator=*/false),
      llvm::SMLoc());
  std::string rendered;
  llvm::raw_string_ostream os(rendered);
  mlir::OwningOpRef<mlir::ModuleOp> module;
  {
    mlir::SourceMgrDiagnosticHandler handler(sourceMgr, ctx, os);
    mlir::ParserConfig config(ctx);
    module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, config);
  }
  os.flush();
  if (!rendered.empty())
    diagnostics(mlirStringRefCreate(rendered.data(), rendered.size()),
                diagnosticsData);
  return wrap(module.release());
}
