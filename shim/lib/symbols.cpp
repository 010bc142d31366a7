// Canonical private symbols: renames the private func.func symbols of a
// module in a deterministic order, so that two traces of one program whose
// private functions got different numeric suffixes (JAX issue 38828) write
// the same bytes.
//
// Symbol references are found in every operation's discardable attributes
// and in its properties as an attribute: the latter matters for ops of
// dialects this MLIR does not register (stablehlo, sdy...), whose properties
// MLIR's SymbolTable utilities do not see.
#include "mlir_cache_key/shim.h"

#include "mlir/CAPI/IR.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"

#include <string>

using namespace mlir;

namespace {
constexpr llvm::StringLiteral kFunc = "func.func";

// Calls `fn` on the attributes `op` holds: its discardable attributes and its
// properties (without `skip`, the name of the symbol `op` defines, if set).
void forEachAttribute(Operation *op, StringAttr skip,
                      llvm::function_ref<void(Attribute)> fn) {
  fn(op->getRawDictionaryAttrs());
  Attribute props = op->getPropertiesAsAttribute();
  if (auto dict = llvm::dyn_cast_or_null<DictionaryAttr>(props); dict && skip) {
    NamedAttrList rest(dict);
    rest.erase(skip);
    props = rest.getDictionary(op->getContext());
  }
  if (props)
    fn(props);
}

// Whether a private name is used other than as a symbol reference: a string
// equal to it, or opaque dialect-attribute text naming it. Renaming would then
// leave a stale use behind.
bool usedAsText(Operation *module, const llvm::StringSet<> &names) {
  bool found = false;
  StringAttr symName =
      StringAttr::get(module->getContext(), SymbolTable::getSymbolAttrName());
  module->walk([&](Operation *op) {
    forEachAttribute(op, symName, [&](Attribute attr) {
      attr.walk<WalkOrder::PreOrder>([&](Attribute a) -> WalkResult {
        if (llvm::isa<SymbolRefAttr>(a))
          return WalkResult::skip(); // its names are references, not text
        if (auto s = llvm::dyn_cast<StringAttr>(a))
          found |= names.contains(s.getValue());
        if (auto o = llvm::dyn_cast<OpaqueAttr>(a))
          for (const auto &name : names)
            found |= o.getAttrData().contains(("@" + name.getKey()).str());
        return WalkResult::advance();
      });
    });
  });
  return found;
}
} // namespace

int64_t mckCanonicalizePrivateSymbols(MlirOperation moduleOp) {
  Operation *module = unwrap(moduleOp);
  if (module->getNumRegions() != 1 || module->getRegion(0).empty())
    return 0;
  Block &body = module->getRegion(0).front();

  // Top-level symbols: the private functions to rename, the names that stay.
  llvm::MapVector<StringAttr, Operation *> privates;
  llvm::StringSet<> kept, privateNames;
  llvm::SmallVector<Operation *> queue;
  for (Operation &op : body) {
    StringAttr name = SymbolTable::getSymbolName(&op);
    if (!name)
      continue;
    bool isPrivate = SymbolTable::getSymbolVisibility(&op) ==
                     SymbolTable::Visibility::Private;
    if (isPrivate && op.getName().getStringRef() == kFunc) {
      privates.insert({name, &op});
      privateNames.insert(name.getValue());
      continue;
    }
    kept.insert(name.getValue());
    if (!isPrivate)
      queue.push_back(&op); // a public entry point
  }
  if (privates.empty())
    return 0;
  if (usedAsText(module, privateNames))
    return -1;

  // Order of first reference, breadth first from the public entry points;
  // unreferenced private functions follow in module order.
  llvm::MapVector<StringAttr, unsigned> order;
  auto note = [&](SymbolRefAttr ref) {
    StringAttr root = ref.getRootReference();
    auto it = privates.find(root);
    if (it != privates.end() && order.insert({root, order.size()}).second)
      queue.push_back(it->second);
  };
  for (size_t i = 0; i < queue.size(); ++i)
    queue[i]->walk<WalkOrder::PreOrder>([&](Operation *op) {
      forEachAttribute(op, {}, [&](Attribute attr) {
        attr.walk<WalkOrder::PreOrder>(note);
      });
    });
  for (auto &entry : privates)
    order.insert({entry.first, order.size()});

  // New names: private_<n>, never one that stays.
  MLIRContext *context = module->getContext();
  llvm::DenseMap<StringAttr, StringAttr> renamed;
  for (auto &[old, n] : order) {
    std::string name = "private_" + std::to_string(n);
    while (kept.contains(name))
      name += "_";
    renamed[old] = StringAttr::get(context, name);
  }

  // Every reference at once, then the definitions.
  AttrTypeReplacer replacer;
  replacer.addReplacement([&](SymbolRefAttr ref) -> std::optional<Attribute> {
    auto it = renamed.find(ref.getRootReference());
    if (it == renamed.end())
      return std::nullopt;
    return SymbolRefAttr::get(it->second, ref.getNestedReferences());
  });
  bool ok = true;
  module->walk([&](Operation *op) {
    DictionaryAttr attrs = op->getRawDictionaryAttrs();
    if (auto replaced = llvm::cast<DictionaryAttr>(replacer.replace(attrs));
        replaced != attrs)
      op->setDiscardableAttrs(replaced);
    if (Attribute props = op->getPropertiesAsAttribute()) {
      Attribute replaced = replacer.replace(props);
      if (replaced != props)
        ok &= succeeded(op->setPropertiesFromAttribute(
            replaced, [op] { return op->emitError(); }));
    }
  });
  for (auto &[old, op] : privates)
    SymbolTable::setSymbolName(op, renamed[old]);
  return ok ? static_cast<int64_t>(privates.size()) : -2;
}
