//===- TrainAttrs.cpp - a model's train block as typed values -------------===//

#include "dialects/Whale/IR/TrainAttrs.h"

#include "support/SettingCtors.h"

using namespace mlir;

namespace whale {
namespace {

/// Argument `name` of the setting `d` (a dictionary whose `kind` names a
/// constructor): the dictionary's value, else the constructor's default,
/// else `dflt` (no such constructor or argument).
double argument(DictionaryAttr d, StringRef name, double dflt) {
  if (const SettingCtor *ctor = d ? findSettingCtor(text(d, "kind")) : nullptr)
    for (const SettingArg &a : ctor->args)
      if (name == a.name)
        dflt = a.dflt;
  return number(d, name, dflt);
}

} // namespace

TrainBlock TrainBlock::read(DictionaryAttr train) {
  TrainBlock t;
  if (!train)
    return t;
  t.present = true;
  t.steps = static_cast<int64_t>(number(train, "steps", 1));
  t.seed = static_cast<uint64_t>(number(train, "seed", 0));
  t.clipGradNorm = number(train, "clip_grad_norm", 0);
  t.saveEvery = static_cast<int64_t>(number(train, "save_every", 0));
  t.evalEvery = static_cast<int64_t>(number(train, "eval_every", 0));
  t.evalSteps = static_cast<int64_t>(number(train, "eval_steps", 8));
  t.logEvery =
      std::max<int64_t>(1, static_cast<int64_t>(number(train, "log_every", 1)));

  auto optimizer = train.getAs<DictionaryAttr>("optimizer");
  OptimizerBlock &o = t.optimizer;
  o.kind = text(optimizer, "kind");
  o.lr = argument(optimizer, "lr", 1e-3);
  o.momentum = argument(optimizer, "momentum", 0);
  o.beta1 = argument(optimizer, "beta1", 0.9);
  o.beta2 = argument(optimizer, "beta2", 0.999);
  o.eps = argument(optimizer, "eps", 1e-8);
  o.weightDecay = argument(optimizer, "weight_decay", 0);

  auto schedule = train.getAs<DictionaryAttr>("lr_schedule");
  t.scheduleKind = text(schedule, "kind");
  t.warmup = argument(schedule, "warmup", 0);
  t.minLr = argument(schedule, "min_lr", 0);

  t.data = train.getAs<DictionaryAttr>("data");
  t.evalData = train.getAs<DictionaryAttr>("eval_data");
  return t;
}

TrainBlock TrainBlock::of(Operation *model) {
  return read(model ? model->getAttrOfType<DictionaryAttr>("whale.train")
                    : DictionaryAttr());
}

} // namespace whale
