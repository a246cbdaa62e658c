//===- SettingCtors.h - a train block's setting constructors --*- C++ -*-===//
//
// `normal(0.02)`, `text(path, seq, batch)`, `adam(lr = 1e-3)`, `cosine(...)`:
// each constructor's category (where it may stand), its named arguments,
// their kinds, defaults and ranges. One table for the front end, which
// checks a script's calls against it (lang/Settings.cpp), and for the
// dialect, which checks a module's `whale.train` against it, so IR written
// by hand meets the rules a script meets. Plain C++ (the front end's
// library links no MLIR).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_SUPPORT_SETTINGCTORS_H
#define WHALE_SUPPORT_SETTINGCTORS_H

#include <string>
#include <vector>

namespace whale {

enum class ArgKind { Int, Float, Str };

struct SettingArg {
  const char *name;
  ArgKind kind;
  bool required;
  double dflt; // for Int and Float
  /// Allowed range, inclusive low; `high` exclusive when `openHigh`.
  double low, high;
  bool openHigh = false;
};

struct SettingCtor {
  const char *name;
  const char *category; ///< "init", "data", "optimizer" or "schedule"
  std::vector<SettingArg> args;
};

/// Every constructor, initializers, data sources, optimizers, schedules.
const std::vector<SettingCtor> &settingCtors();
/// The constructor called `name`, or null.
const SettingCtor *findSettingCtor(const std::string &name);
/// Whether `v` lies in `arg`'s range.
bool inRange(const SettingArg &arg, double v);

} // namespace whale

#endif // WHALE_SUPPORT_SETTINGCTORS_H
