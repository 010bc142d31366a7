// Canonicalization in place, then undone. Cloning a large module and
// destroying the clone cost more than canonicalizing and writing it; saving
// what canonicalization changes (every location, and the attributes of the ops
// it rewrites) and putting it back leaves the caller's module as it was:
// locations and attributes are uniqued, so the same handles mean the same IR.
#include "mlir_cache_key/shim.h"

#include "mlir/CAPI/IR.h"
#include "mlir/IR/Operation.h"

#include <utility>
#include <vector>

struct MckSnapshot {
  std::vector<std::pair<mlir::Operation *, mlir::Location>> ops;
  std::vector<std::pair<mlir::BlockArgument, mlir::Location>> arguments;
  struct Attributes {
    mlir::Operation *op;
    mlir::Attribute properties;
    mlir::DictionaryAttr discardable;
  };
  std::vector<Attributes> attributes;
};

MckSnapshot *mckSnapshotTake(MlirOperation root,
                             const MlirOperation *rewritten, size_t count) {
  auto *snapshot = new MckSnapshot;
  unwrap(root)->walk([&](mlir::Operation *op) {
    snapshot->ops.emplace_back(op, op->getLoc());
    for (mlir::Region &region : op->getRegions())
      for (mlir::Block &block : region)
        for (mlir::BlockArgument argument : block.getArguments())
          snapshot->arguments.emplace_back(argument, argument.getLoc());
  });
  snapshot->attributes.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    mlir::Operation *op = unwrap(rewritten[i]);
    snapshot->attributes.push_back(
        {op, op->getPropertiesAsAttribute(), op->getDiscardableAttrDictionary()});
  }
  return snapshot;
}

bool mckSnapshotRestore(MckSnapshot *snapshot) {
  for (auto &[op, loc] : snapshot->ops)
    op->setLoc(loc);
  for (auto &[argument, loc] : snapshot->arguments)
    argument.setLoc(loc);
  bool exact = true;
  for (auto &saved : snapshot->attributes) {
    if (saved.properties &&
        mlir::failed(saved.op->setPropertiesFromAttribute(saved.properties,
                                                          nullptr)))
      exact = false;
    saved.op->setDiscardableAttrs(saved.discardable);
    exact = exact &&
            saved.op->getPropertiesAsAttribute() == saved.properties &&
            saved.op->getDiscardableAttrDictionary() == saved.discardable;
  }
  delete snapshot;
  return exact;
}
