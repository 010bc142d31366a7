// The library's one walk over a module, and the undo of what it changed.
//
// One pre-order walk does what three did (finding the custom calls, saving
// the locations for the undo, and strip-debuginfo): it saves each operation's
// and block argument's location, replaces it by loc(unknown) exactly as
// upstream strip-debuginfo does (operations and block arguments only; no
// location nested in an attribute is touched), and collects the
// stablehlo.custom_call ops, the only operations whose attributes
// canonicalization rewrites, saving those attributes too. Putting back what
// was saved leaves a borrowed module as it was: locations and attributes are
// uniqued, so the same handles mean the same IR. Cloning a large module and
// destroying the clone cost more than this.
#include "mlir_cache_key/shim.h"

#include "mlir/CAPI/IR.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/OperationSupport.h"

#include <utility>
#include <vector>

namespace {
// Walks made by this thread: canonicalization runs on the caller's thread,
// so a test can count its own walks while others run in parallel.
thread_local uint64_t walksOnThisThread = 0;
} // namespace

struct MckWalk {
  std::vector<MckCustomCall> customCalls;
  std::vector<std::pair<mlir::Operation *, mlir::Location>> ops;
  std::vector<std::pair<mlir::BlockArgument, mlir::Location>> arguments;
  struct Attributes {
    mlir::Operation *op;
    mlir::Attribute properties;
    mlir::DictionaryAttr discardable;
  };
  std::vector<Attributes> attributes;
};

MckWalk *mckWalk(MlirOperation root, bool strip, bool save) {
  ++walksOnThisThread;
  auto *walk = new MckWalk;
  mlir::Operation *top = unwrap(root);
  mlir::Location unknown = mlir::UnknownLoc::get(top->getContext());
  // Operation names are uniqued per context: one pointer comparison per op.
  mlir::OperationName customCall("stablehlo.custom_call", top->getContext());
  size_t position = 0;
  top->walk<mlir::WalkOrder::PreOrder>([&](mlir::Operation *op) {
    mlir::Location location = op->getLoc();
    if (op->getName() == customCall) {
      walk->customCalls.push_back({wrap(op), position, wrap(location)});
      if (save)
        walk->attributes.push_back({op, op->getPropertiesAsAttribute(),
                                    op->getDiscardableAttrDictionary()});
    }
    ++position;
    if (!strip)
      return;
    if (save)
      walk->ops.emplace_back(op, location);
    op->setLoc(unknown);
    for (mlir::Region &region : op->getRegions())
      for (mlir::Block &block : region)
        for (mlir::BlockArgument argument : block.getArguments()) {
          if (save)
            walk->arguments.emplace_back(argument, argument.getLoc());
          argument.setLoc(unknown);
        }
  });
  return walk;
}

const MckCustomCall *mckWalkCustomCalls(const MckWalk *walk, size_t *count) {
  *count = walk->customCalls.size();
  return walk->customCalls.data();
}

bool mckWalkFinish(MckWalk *walk) {
  for (auto &[op, loc] : walk->ops)
    op->setLoc(loc);
  for (auto &[argument, loc] : walk->arguments)
    argument.setLoc(loc);
  bool exact = true;
  for (auto &saved : walk->attributes) {
    if (saved.properties &&
        mlir::failed(saved.op->setPropertiesFromAttribute(saved.properties,
                                                          nullptr)))
      exact = false;
    saved.op->setDiscardableAttrs(saved.discardable);
    exact = exact &&
            saved.op->getPropertiesAsAttribute() == saved.properties &&
            saved.op->getDiscardableAttrDictionary() == saved.discardable;
  }
  delete walk;
  return exact;
}

uint64_t mckWalksOnThisThread(void) { return walksOnThisThread; }
