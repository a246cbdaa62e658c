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
  if (name == "whale.model") {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError("'whale.model' is a unit attribute");
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
  // The devices a plan is for (lowering/ClusterView.h).
  if (name == "whale.cluster") {
    auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !dict)
      return op->emitError("'whale.cluster' is a dictionary on the module");
    auto flops = dict.getAs<DenseF64ArrayAttr>("flops");
    auto memory = dict.getAs<DenseI64ArrayAttr>("memory");
    if (!flops || !memory || flops.size() != memory.size())
      return op->emitError("'whale.cluster' needs 'flops' (array<f64>) and "
                           "'memory' (array<i64>) with one entry per device");
    if (llvm::any_of(flops.asArrayRef(), [](double f) { return !(f > 0); }) ||
        llvm::any_of(memory.asArrayRef(), [](int64_t m) { return m < 0; }))
      return op->emitError("'whale.cluster' rates must be positive and "
                           "memory limits not negative");
    // Optional, one entry per device each: whether it is a GPU, its
    // threads, its data sheet's name ("" for none).
    auto gpus = dict.get("gpus");
    if (gpus && (!isa<DenseBoolArrayAttr>(gpus) ||
                 cast<DenseBoolArrayAttr>(gpus).size() != flops.size()))
      return op->emitError("'whale.cluster' 'gpus' is an array<i1> with one "
                           "entry per device");
    auto threads = dict.get("threads");
    if (threads && (!isa<DenseI64ArrayAttr>(threads) ||
                    cast<DenseI64ArrayAttr>(threads).size() != flops.size() ||
                    llvm::any_of(cast<DenseI64ArrayAttr>(threads).asArrayRef(),
                                 [](int64_t t) { return t < 1; })))
      return op->emitError("'whale.cluster' 'threads' is an array<i64> of "
                           "positive counts, one per device");
    auto models = dict.get("models");
    if (models && (!isa<ArrayAttr>(models) ||
                   int64_t(cast<ArrayAttr>(models).size()) != flops.size() ||
                   !llvm::all_of(cast<ArrayAttr>(models), [](Attribute a) {
                     return isa<StringAttr>(a);
                   })))
      return op->emitError("'whale.cluster' 'models' is an array of data "
                           "sheet names (\"\" for none), one per device");
    // A GPU's share of its SMs (0: the whole GPU).
    auto sms = dict.get("sms");
    if (sms && (!isa<DenseI64ArrayAttr>(sms) ||
                cast<DenseI64ArrayAttr>(sms).size() != flops.size() ||
                llvm::any_of(cast<DenseI64ArrayAttr>(sms).asArrayRef(),
                             [](int64_t n) { return n < 0; })))
      return op->emitError("'whale.cluster' 'sms' is an array<i64> of SM "
                           "counts (0: a whole GPU), one per device");
    // The contexts side by side on a device's GPU, itself included.
    auto contexts = dict.get("contexts");
    if (contexts &&
        (!isa<DenseI64ArrayAttr>(contexts) ||
         cast<DenseI64ArrayAttr>(contexts).size() != flops.size() ||
         llvm::any_of(cast<DenseI64ArrayAttr>(contexts).asArrayRef(),
                      [](int64_t n) { return n < 1; })))
      return op->emitError("'whale.cluster' 'contexts' is an array<i64> of "
                           "positive counts (1: a GPU of its own), one per "
                           "device");
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
