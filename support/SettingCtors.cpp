//===- SettingCtors.cpp - the constructors of a train block's settings ----===//

#include "support/SettingCtors.h"

namespace whale {

namespace {
constexpr double kInf = 1e300;
} // namespace

const std::vector<SettingCtor> &settingCtors() {
  static const std::vector<SettingCtor> table = {
      // initializers
      {"zeros", "init", {}},
      {"ones", "init", {}},
      {"normal",
       "init",
       {{"std", ArgKind::Float, false, 0.02, 0, kInf},
        {"mean", ArgKind::Float, false, 0.0, -kInf, kInf}}},
      {"uniform",
       "init",
       {{"low", ArgKind::Float, true, 0, -kInf, kInf},
        {"high", ArgKind::Float, true, 0, -kInf, kInf}}},
      {"xavier", "init", {{"gain", ArgKind::Float, false, 1.0, 0, kInf}}},
      // data sources
      {"synthetic",
       "data",
       {{"batch", ArgKind::Int, true, 0, 1, kInf},
        {"seed", ArgKind::Int, false, 0, 0, kInf}}},
      {"text",
       "data",
       {{"path", ArgKind::Str, true, 0, 0, 0},
        {"seq", ArgKind::Int, true, 0, 1, kInf},
        {"batch", ArgKind::Int, true, 0, 1, kInf},
        {"seed", ArgKind::Int, false, 0, 0, kInf}}},
      // features and labels from numpy .npy files, memory-mapped
      {"arrays",
       "data",
       {{"features", ArgKind::Str, true, 0, 0, 0},
        {"labels", ArgKind::Str, true, 0, 0, 0},
        {"batch", ArgKind::Int, true, 0, 1, kInf},
        {"seed", ArgKind::Int, false, 0, 0, kInf}}},
      // a flat file of token ids (uint16 or uint32), memory-mapped
      {"tokens",
       "data",
       {{"path", ArgKind::Str, true, 0, 0, 0},
        {"seq", ArgKind::Int, true, 0, 1, kInf},
        {"batch", ArgKind::Int, true, 0, 1, kInf},
        {"dtype", ArgKind::Str, false, 0, 0, 0},
        {"seed", ArgKind::Int, false, 0, 0, kInf}}},
      // optimizers
      {"sgd",
       "optimizer",
       {{"lr", ArgKind::Float, true, 0, 1e-300, kInf},
        {"momentum", ArgKind::Float, false, 0.0, 0, 1, true},
        {"weight_decay", ArgKind::Float, false, 0.0, 0, kInf}}},
      {"adam",
       "optimizer",
       {{"lr", ArgKind::Float, false, 1e-3, 1e-300, kInf},
        {"beta1", ArgKind::Float, false, 0.9, 0, 1, true},
        {"beta2", ArgKind::Float, false, 0.999, 0, 1, true},
        {"eps", ArgKind::Float, false, 1e-8, 1e-300, kInf},
        {"weight_decay", ArgKind::Float, false, 0.0, 0, kInf}}},
      {"adamw",
       "optimizer",
       {{"lr", ArgKind::Float, false, 1e-3, 1e-300, kInf},
        {"beta1", ArgKind::Float, false, 0.9, 0, 1, true},
        {"beta2", ArgKind::Float, false, 0.999, 0, 1, true},
        {"eps", ArgKind::Float, false, 1e-8, 1e-300, kInf},
        {"weight_decay", ArgKind::Float, false, 0.01, 0, kInf}}},
      // learning-rate schedules
      {"constant", "schedule", {}},
      {"cosine",
       "schedule",
       {{"warmup", ArgKind::Int, false, 0, 0, kInf},
        {"min_lr", ArgKind::Float, false, 0.0, 0, kInf}}},
  };
  return table;
}

const SettingCtor *findSettingCtor(const std::string &name) {
  for (const SettingCtor &c : settingCtors())
    if (name == c.name)
      return &c;
  return nullptr;
}

bool inRange(const SettingArg &arg, double v) {
  return v >= arg.low && (arg.openHigh ? v < arg.high : v <= arg.high);
}

} // namespace whale
