//===- Plan.h - a model's plan, typed ---------------------------*- C++ -*-===//
//
// The planning passes record what they decide on the model function as
// `whale.plan`. In the IR it stays a dictionary, so that each pass adds its
// entries after the last and `whale-opt` runs any of them alone; its schema
// is PlanEntries.def, the one table of every entry's name and type:
//   - ModelPlan reads it through one typed accessor per entry (enums for
//     the schedule and the balance);
//   - PlanUpdate writes entries through typed setters;
//   - the dialect checks the attribute against the same table, so an entry
//     of an unknown name or the wrong type is an error wherever the IR
//     comes from.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_DIALECTS_WHALE_IR_PLAN_H
#define WHALE_DIALECTS_WHALE_IR_PLAN_H

#include "dialects/Whale/IR/WhaleDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"

#include <optional>

namespace whale {

/// The name of the attribute.
inline constexpr llvm::StringLiteral kPlanAttr = "whale.plan";

/// A model's plan, read. Every accessor is empty (std::nullopt, a null
/// array) where the plan has no such entry yet.
class ModelPlan {
public:
  ModelPlan() = default;
  explicit ModelPlan(mlir::DictionaryAttr dict) : dict(dict) {}
  /// The plan on `op` (a model function); empty when it has none.
  static ModelPlan of(mlir::Operation *op) {
    return ModelPlan(op->getAttrOfType<mlir::DictionaryAttr>(kPlanAttr));
  }
  explicit operator bool() const { return static_cast<bool>(dict); }
  mlir::DictionaryAttr getDictionary() const { return dict; }

#define WHALE_PLAN_INT(accessor, key) std::optional<int64_t> accessor() const;
#define WHALE_PLAN_INTS(accessor, key)                                         \
  std::optional<llvm::ArrayRef<int64_t>> accessor() const;
#define WHALE_PLAN_REAL(accessor, key) std::optional<double> accessor() const;
#define WHALE_PLAN_REALS(accessor, key)                                        \
  std::optional<llvm::ArrayRef<double>> accessor() const;
#define WHALE_PLAN_ENUM(accessor, key, E) std::optional<E> accessor() const;
#define WHALE_PLAN_ARRAY(accessor, key) mlir::ArrayAttr accessor() const;
#include "dialects/Whale/IR/PlanEntries.def"

  /// How many consecutive replicas of a stage read the same rows of the
  /// batch: the shard groups' size under split_rows = "whole", else 1.
  int64_t rowGroupOrOne() const {
    return std::max<int64_t>(1, rowGroup().value_or(1));
  }

  /// Checks each entry of `dict` against PlanEntries.def: a known name and
  /// a value of its type (an enum's spelling for the enums).
  static mlir::LogicalResult
  verify(mlir::DictionaryAttr dict,
         llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

private:
  mlir::DictionaryAttr dict;
};

/// Entries to set on a model's plan, added to those it has (or replacing
/// them) when applied:
/// `PlanUpdate(fn).globalBatch(64).microBatches(4).apply()`.
class PlanUpdate {
public:
  explicit PlanUpdate(mlir::Operation *fn) : fn(fn) {}

#define WHALE_PLAN_INT(accessor, key) PlanUpdate &accessor(int64_t v);
#define WHALE_PLAN_INTS(accessor, key)                                         \
  PlanUpdate &accessor(llvm::ArrayRef<int64_t> v);
#define WHALE_PLAN_REAL(accessor, key) PlanUpdate &accessor(double v);
#define WHALE_PLAN_REALS(accessor, key)                                        \
  PlanUpdate &accessor(llvm::ArrayRef<double> v);
#define WHALE_PLAN_ENUM(accessor, key, E) PlanUpdate &accessor(E v);
#define WHALE_PLAN_ARRAY(accessor, key) PlanUpdate &accessor(mlir::ArrayAttr v);
#include "dialects/Whale/IR/PlanEntries.def"

  /// Writes the entries into the function's plan.
  void apply();

private:
  PlanUpdate &add(llvm::StringRef key, mlir::Attribute value);

  mlir::Operation *fn;
  llvm::SmallVector<mlir::NamedAttribute> entries;
};

} // namespace whale

#endif
