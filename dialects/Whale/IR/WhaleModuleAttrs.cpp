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
#include "support/SettingCtors.h"

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

/// A setting of a train block (`data = text(...)`, `optimizer = adam(...)`)
/// as the front end writes it: a dictionary whose `kind` names a
/// constructor of `category` (SettingCtors.h), its required arguments
/// present and every argument of its kind and in its range.
static LogicalResult verifySetting(Operation *op, StringRef key,
                                   Attribute value, StringRef category) {
  auto fail = [&]() {
    return op->emitError() << "'whale.train' entry '" << key << "' ";
  };
  auto dict = dyn_cast<DictionaryAttr>(value);
  auto kind = dict ? dict.getAs<StringAttr>("kind") : StringAttr();
  const SettingCtor *ctor = kind ? findSettingCtor(kind.str()) : nullptr;
  if (!ctor || category != ctor->category)
    return fail() << "must be a dictionary whose 'kind' is one of the "
                  << category << " constructors";
  for (NamedAttribute entry : dict) {
    StringRef name = entry.getName().strref();
    if (name == "kind")
      continue;
    const SettingArg *arg = nullptr;
    for (const SettingArg &a : ctor->args)
      if (name == a.name)
        arg = &a;
    if (!arg)
      return fail() << "has '" << name << "', which " << ctor->name
                    << "(...) does not take";
    Attribute v = entry.getValue();
    if (arg->kind == ArgKind::Str) {
      auto s = dyn_cast<StringAttr>(v);
      if (!s || s.empty())
        return fail() << "'" << name << "' must be a non-empty string";
      continue;
    }
    std::optional<double> number;
    if (auto i = dyn_cast<IntegerAttr>(v))
      number = static_cast<double>(i.getValue().getSExtValue());
    else if (auto f = dyn_cast<FloatAttr>(v); f && arg->kind == ArgKind::Float)
      number = f.getValueAsDouble();
    if (!number || !inRange(*arg, *number))
      return fail() << "'" << name << "' must be "
                    << (arg->kind == ArgKind::Int ? "an integer" : "a number")
                    << " in " << ctor->name << "(...)'s range";
  }
  for (const SettingArg &a : ctor->args)
    if (a.required && !dict.get(a.name))
      return fail() << "needs '" << a.name << "'";
  return success();
}

/// A model's train block: the entries the front end writes, each as its
/// rule says (lang/Sema.cpp's kTrainKeys); `steps` is required.
static LogicalResult verifyTrainBlock(Operation *op, DictionaryAttr train) {
  auto steps = train.getAs<IntegerAttr>("steps");
  if (!steps || steps.getValue().getSExtValue() < 1)
    return op->emitError("'whale.train' needs a positive integer 'steps'");
  for (NamedAttribute entry : train) {
    StringRef key = entry.getName().strref();
    Attribute v = entry.getValue();
    if (key == "steps")
      continue;
    if (key == "data" || key == "eval_data") {
      if (failed(verifySetting(op, key, v, "data")))
        return failure();
    } else if (key == "optimizer") {
      if (failed(verifySetting(op, key, v, "optimizer")))
        return failure();
    } else if (key == "lr_schedule") {
      if (failed(verifySetting(op, key, v, "schedule")))
        return failure();
    } else if (key == "clip_grad_norm") {
      auto f = dyn_cast<FloatAttr>(v);
      auto i = dyn_cast<IntegerAttr>(v);
      if (!(f ? f.getValueAsDouble() > 0
              : i && i.getValue().isStrictlyPositive()))
        return op->emitError("'whale.train' entry 'clip_grad_norm' must be a "
                             "positive number");
    } else if (key == "seed" || key == "eval_every" || key == "eval_steps" ||
               key == "log_every" || key == "save_every") {
      auto i = dyn_cast<IntegerAttr>(v);
      int64_t least = key == "seed" ? 0 : 1;
      if (!i || i.getValue().getSExtValue() < least)
        return op->emitError()
               << "'whale.train' entry '" << key << "' must be "
               << (least ? "a positive" : "a non-negative") << " integer";
    } else {
      return op->emitError() << "'whale.train' has no entry '" << key << "'";
    }
  }
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
  // Activation recomputation's copy of a forward op (lowering/Passes.h).
  if (name == "whale.recomputed") {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError("'whale.recomputed' is a unit attribute");
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
    return verifyTrainBlock(op, dict);
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
  // The devices a plan is for (lowering/Transforms/Parallel/ClusterView.h);
  // each device's values are checked as the attribute is made
  // (DeviceAttr::verify).
  if (name == "whale.cluster") {
    if (!isa<ModuleOp>(op) || !isa<ClusterAttr>(attr.getValue()))
      return op->emitError("'whale.cluster' is a #whale.cluster on the "
                           "module");
    return success();
  }
  if (name == "whale.cost")
    return success(isa<DictionaryAttr>(attr.getValue()));
  // The layers a rank program gathers as one unit (-whale-shard-
  // parameters: the config's, or the plan's choice).
  if (name == "whale.gather_layers") {
    auto k = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<func::FuncOp>(op) || !k || k.getValue().getSExtValue() < 1)
      return op->emitError("'whale.gather_layers' is a positive integer on "
                           "a function");
    return success();
  }
  // How often a rank program gathers its sharded parameters
  // (-whale-shard-parameters: the config's, or what memory allows).
  if (name == "whale.gather_every") {
    auto every = dyn_cast<StringAttr>(attr.getValue());
    if (!isa<func::FuncOp>(op) || !every ||
        !symbolizeGatherEvery(every.getValue()))
      return op->emitError("'whale.gather_every' is \"micro_batch\" or "
                           "\"step\" on a function");
    return success();
  }
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
