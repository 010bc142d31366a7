// Bytecode writing with a pinned version and a fixed producer string: the C
// API's writer config cannot set the producer, and the default one embeds the
// LLVM patch version, which would split keys between 22.1.8 and 22.1.9.
#include "mlir_cache_key/shim.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "llvm/Support/raw_ostream.h"

namespace {
// Forwards buffered chunks to a C callback; buffering keeps the number of
// callback calls (and so hashing overhead) proportional to size / 64 KiB.
class ChunkStream final : public llvm::raw_ostream {
public:
  ChunkStream(MlirStringCallback sink, void *data) : sink(sink), data(data) {
    SetBufferSize(64 * 1024);
  }
  ~ChunkStream() override { flush(); }

private:
  void write_impl(const char *ptr, size_t size) override {
    sink(mlirStringRefCreate(ptr, size), data);
    pos += size;
  }
  uint64_t current_pos() const override { return pos; }

  MlirStringCallback sink;
  void *data;
  uint64_t pos = 0;
};
} // namespace

MlirLogicalResult mckWriteBytecode(MlirOperation op, int64_t version,
                                   MlirStringRef producer,
                                   MlirStringCallback sink, void *sinkData) {
  mlir::BytecodeWriterConfig config(unwrap(producer));
  config.setDesiredBytecodeVersion(version);
  ChunkStream stream(sink, sinkData);
  mlir::LogicalResult result =
      mlir::writeBytecodeToFile(unwrap(op), stream, config);
  stream.flush();
  return wrap(result);
}
