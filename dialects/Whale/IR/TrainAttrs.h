//===- TrainAttrs.h - reading a model's settings dictionaries ---*- C++ -*-===//
//
// The `whale.train` dictionary (data, optimizer, schedule) as the passes
// and the training driver read it: one reading for both, so the planner's
// memory model counts the optimizer state the train loop keeps.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_DIALECTS_WHALE_IR_TRAINATTRS_H
#define WHALE_DIALECTS_WHALE_IR_TRAINATTRS_H

#include "dialects/Whale/IR/WhaleDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace whale {

/// The number at `key` (an integer or a float), or `dflt`.
inline double number(mlir::DictionaryAttr d, llvm::StringRef key, double dflt) {
  if (!d)
    return dflt;
  if (auto f = d.getAs<mlir::FloatAttr>(key))
    return f.getValueAsDouble();
  if (auto i = d.getAs<mlir::IntegerAttr>(key))
    return static_cast<double>(i.getInt());
  return dflt;
}

/// The string at `key`, or "".
inline std::string text(mlir::DictionaryAttr d, llvm::StringRef key) {
  auto s = d ? d.getAs<mlir::StringAttr>(key) : mlir::StringAttr();
  return s ? s.str() : std::string();
}

/// Optimizer state tensors per parameter: SGD's velocity when it has
/// momentum, Adam's two moments.
inline int optimizerStateCount(mlir::DictionaryAttr optimizer) {
  if (text(optimizer, "kind") == "sgd")
    return number(optimizer, "momentum", 0) > 0 ? 1 : 0;
  return 2;
}

/// The settings of the module `op` sits in (its whale.config); all unset
/// when it has none.
inline SettingsAttr settingsOf(mlir::Operation *op) {
  auto module = mlir::isa<mlir::ModuleOp>(op)
                    ? mlir::cast<mlir::ModuleOp>(op)
                    : op->getParentOfType<mlir::ModuleOp>();
  if (auto s = module ? module->getAttrOfType<SettingsAttr>("whale.config")
                      : SettingsAttr())
    return s;
  return SettingsAttr::get(op->getContext(), 0, 0, 0, 0, false, false, false,
                           std::nullopt, std::nullopt, std::nullopt,
                           std::nullopt, std::nullopt, std::nullopt, 0);
}

/// Whether the script's config asks for amp = "bf16".
inline bool ampBf16(mlir::Operation *model) { return settingsOf(model).bf16(); }

} // namespace whale

#endif // WHALE_DIALECTS_WHALE_IR_TRAINATTRS_H
