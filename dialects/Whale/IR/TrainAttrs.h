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

#include <cstdint>
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

/// A train block's optimizer, each argument the block's or else its
/// constructor's default (support/SettingCtors.cpp), so that IR written by
/// hand and a script that leaves an argument out train alike.
struct OptimizerBlock {
  std::string kind; ///< "sgd", "adam" or "adamw"; "" where none is given
  double lr = 0, momentum = 0, beta1 = 0, beta2 = 0, eps = 0, weightDecay = 0;

  /// Optimizer state tensors per parameter: SGD's velocity when it has
  /// momentum, Adam's two moments (also where no optimizer is given yet:
  /// the planner's memory model counts the most a run can keep).
  int stateCount() const {
    if (kind == "sgd")
      return momentum > 0 ? 1 : 0;
    return 2;
  }
};

/// A model's `whale.train` block (verified against the same table by the
/// dialect) as typed values: the one place its keys are read. `data` and
/// `eval_data` stay dictionaries, read whole by lib/compile/DataSpec.
struct TrainBlock {
  bool present = false; ///< whether the model has a train block at all
  int64_t steps = 1;
  uint64_t seed = 0;
  double clipGradNorm = 0; ///< 0: no clipping
  int64_t saveEvery = 0, evalEvery = 0, evalSteps = 8, logEvery = 1;
  OptimizerBlock optimizer;
  std::string scheduleKind; ///< "cosine", "constant" or ""
  double warmup = 0, minLr = 0;
  mlir::DictionaryAttr data, evalData;

  /// The block of `model` (a function with `whale.train`); defaults where
  /// it has none.
  static TrainBlock of(mlir::Operation *model);
  /// The block as a dictionary holds it.
  static TrainBlock read(mlir::DictionaryAttr train);
};

/// Optimizer state tensors per parameter of `model`'s train block (none
/// where the model has no train block).
inline int optimizerStateCount(mlir::Operation *model) {
  TrainBlock t = TrainBlock::of(model);
  return t.present ? t.optimizer.stateCount() : 0;
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
                           false, false, std::nullopt, std::nullopt,
                           std::nullopt, std::nullopt, std::nullopt,
                           std::nullopt, 0, 0, 0, std::nullopt);
}

/// Whether the script's config asks for amp = "bf16".
inline bool ampBf16(mlir::Operation *model) { return settingsOf(model).bf16(); }

} // namespace whale

#endif // WHALE_DIALECTS_WHALE_IR_TRAINATTRS_H
