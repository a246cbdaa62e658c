//===- WhaleModuleAttrs.cpp - verifies whale.* discardable attributes -----===//
//
// The script's `config` block lands on the module as `whale.config` (a
// #whale.settings, checked as it is made); a model
// function carries `whale.model`, its default strategy and its `train` block.
// These checks keep hand-written IR to the same rules the front end enforces.
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/Plan.h"
#include "dialects/Whale/IR/WhaleOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace whale;

static LogicalResult verifyConfig(Operation *op, Attribute attr) {
  // Its values are checked as the attribute is made (SettingsAttr::verify).
  if (!isa<SettingsAttr>(attr))
    return op->emitError("'whale.config' must be a #whale.settings "
                         "attribute, not ")
           << attr;
  return success();
}

LogicalResult WhaleDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == "whale.config") {
    if (!isa<ModuleOp>(op))
      return op->emitError("'whale.config' belongs on the module");
    return verifyConfig(op, attr.getValue());
  }
  // A model is a function the passes walk: a declaration has no body to
  // plan (four passes once dereferenced its missing block).
  if (name == "whale.model") {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError("'whale.model' is a unit attribute");
    auto fn = dyn_cast<func::FuncOp>(op);
    if (!fn || fn.isExternal())
      return op->emitError("'whale.model' marks a function with a body, not "
                           "a declaration");
    return success();
  }
  if (name == "whale.default_strategy") {
    if (!isa<StrategyAttr>(attr.getValue()))
      return op->emitError("'whale.default_strategy' must be a strategy");
    return success();
  }
  if (name == "whale.default_devices") {
    auto i = dyn_cast<IntegerAttr>(attr.getValue());
    if (!i || i.getValue().getSExtValue() < 1)
      return op->emitError(
          "'whale.default_devices' must be a positive integer");
    return success();
  }
  if (name == "whale.train") {
    auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
    if (!dict)
      return op->emitError("'whale.train' must be a dictionary");
    auto steps = dict.getAs<IntegerAttr>("steps");
    if (!steps || steps.getValue().getSExtValue() < 1)
      return op->emitError("'whale.train' needs a positive integer 'steps'");
    return success();
  }
  if (name == "whale.gradients") {
    auto names = dyn_cast<ArrayAttr>(attr.getValue());
    if (!names ||
        !llvm::all_of(names, [](Attribute a) { return isa<StringAttr>(a); }))
      return op->emitError(
          "'whale.gradients' must be an array of parameter names");
    return success();
  }
  // A model's input names, in argument order.
  if (name == "whale.inputs") {
    auto fn = dyn_cast<func::FuncOp>(op);
    auto names = dyn_cast<ArrayAttr>(attr.getValue());
    if (!fn || !names ||
        !llvm::all_of(names, [](Attribute a) { return isa<StringAttr>(a); }) ||
        names.size() != fn.getNumArguments())
      return op->emitError("'whale.inputs' must name each argument of its "
                           "function");
    return success();
  }
  // What the planner records on a model (dialects/Whale/IR/Plan.h: every
  // entry of PlanEntries.def, of its type), and a rank program's place in
  // it (lowering/Plan.h).
  if (name == "whale.plan" || name == "whale.rank") {
    if (!isa<func::FuncOp>(op) || !isa<DictionaryAttr>(attr.getValue()))
      return op->emitError()
             << "'" << name << "' is a dictionary on a function";
    if (name == "whale.plan")
      return ModelPlan::verify(cast<DictionaryAttr>(attr.getValue()),
                               [&] { return op->emitError(); });
    return success();
  }
  // Where auto_parallel cut a model (-whale-taskgraph-partition).
  if (name == "whale.cut") {
    auto ends = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!isa<func::FuncOp>(op) || !ends || ends.empty() ||
        !llvm::is_sorted(ends.asArrayRef()) || ends[0] < 1)
      return op->emitError("'whale.cut' is an array<i64> of increasing op "
                           "counts on a function");
    return success();
  }
  // The devices a plan is for (lowering/ClusterView.h); each device's
  // values are checked as the attribute is made (DeviceAttr::verify).
  if (name == "whale.cluster") {
    if (!isa<ModuleOp>(op) || !isa<ClusterAttr>(attr.getValue()))
      return op->emitError("'whale.cluster' is a #whale.cluster on the "
                           "module");
    return success();
  }
  if (name == "whale.cost")
    return success(isa<DictionaryAttr>(attr.getValue()));
  // Where a call of a step's micro-batch starts in its rank's rows
  // (lowering/Passes.h, kStepRowsAttr).
  if (name == "whale.row_offset") {
    auto rows = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<func::CallOp>(op) || !rows || rows.getValue().isNegative())
      return op->emitError("'whale.row_offset' is a row count, not negative, "
                           "on a call");
    return success();
  }
  return op->emitError() << "unknown whale attribute '" << name << "'";
}
