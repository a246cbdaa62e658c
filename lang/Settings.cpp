//===- Settings.cpp - initializers, data sources, optimizers, schedules ---===//
//
// Constructor calls such as `normal(0.02)` or `adam(lr = 1e-3)` describe how
// something is set up rather than computing a tensor. Each has a category
// (where it may be used), named arguments with defaults, and range checks.
//
//===----------------------------------------------------------------------===//

#include "lang/SemaImpl.h"

#include "support/SettingCtors.h"

namespace whale::lang {

namespace {

const SettingCtor *findCtor(const std::string &name) {
  return findSettingCtor(name);
}

std::string formatNumber(double v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

} // namespace

bool Sema::isSettingCtor(const std::string &name) { return findCtor(name); }

const std::vector<std::string> &Sema::settingCtorNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const SettingCtor &c : settingCtors())
      out.push_back(c.name);
    return out;
  }();
  return names;
}

SVal Sema::callSetting(const std::string &name, const CallExpr &call) {
  const SettingCtor *ctor = findCtor(name);
  std::vector<std::string> params;
  size_t required = 0;
  for (const SettingArg &a : ctor->args) {
    params.push_back(a.name);
    if (a.required)
      required = params.size();
  }
  std::vector<BoundArg> args;
  if (!bindArgs(name, call, params, required, args))
    return SVal::error();

  SVal out;
  out.kind = SVal::Kind::Setting;
  out.category = ctor->category;
  out.setting.kind = Setting::Kind::Dict;
  out.setting.dict.push_back({"kind", Setting::ofStr(name)});
  for (size_t i = 0; i < ctor->args.size(); ++i) {
    const SettingArg &spec = ctor->args[i];
    const BoundArg &arg = args[i];
    std::string what =
        "argument '" + std::string(spec.name) + "' of '" + name + "'";
    if (!arg.present && spec.required) {
      error(call.getLoc(), "'" + name + "' needs argument '" + spec.name + "'");
      return SVal::error();
    }
    if (spec.kind == ArgKind::Str) {
      if (!arg.present)
        continue; // an optional string: its reader's default
      if (arg.value.kind != SVal::Kind::Str || arg.value.s.empty()) {
        error(arg.loc,
              what + " must be a non-empty string, got " + describe(arg.value));
        return SVal::error();
      }
      if (name == "tokens" && std::string(spec.name) == "dtype" &&
          arg.value.s != "uint16" && arg.value.s != "uint32") {
        error(arg.loc, what + " must be \"uint16\" or \"uint32\", got \"" +
                           arg.value.s + "\"");
        return SVal::error();
      }
      out.setting.dict.push_back({spec.name, Setting::ofStr(arg.value.s)});
      continue;
    }
    double v = spec.dflt;
    if (arg.present) {
      const SVal &x = arg.value;
      if (x.kind == SVal::Kind::Int && x.i.isKnown())
        v = static_cast<double>(x.i.value);
      else if (x.kind == SVal::Kind::Float && spec.kind == ArgKind::Float)
        v = x.f;
      else {
        error(arg.loc,
              what + " must be " +
                  (spec.kind == ArgKind::Int ? "an integer" : "a number") +
                  ", got " + describe(x));
        return SVal::error();
      }
    }
    if (!inRange(spec, v)) {
      std::string range =
          spec.openHigh ? "in [" + formatNumber(spec.low) + ", " +
                              formatNumber(spec.high) + ")"
          : spec.low <= 1e-300 && spec.low > 0 ? "positive"
                                               : ">= " + formatNumber(spec.low);
      error(arg.loc, what + " must be " + range + ", got " + formatNumber(v));
      return SVal::error();
    }
    if (spec.kind == ArgKind::Int)
      out.setting.dict.push_back(
          {spec.name, Setting::ofInt(static_cast<int64_t>(
                          arg.present ? arg.value.i.value
                                      : static_cast<int64_t>(spec.dflt)))});
    else
      out.setting.dict.push_back({spec.name, Setting::ofFloat(v)});
  }
  if (name == "uniform" &&
      out.setting.get("low")->f > out.setting.get("high")->f) {
    error(call.getLoc(), "uniform(low, high) needs low <= high");
    return SVal::error();
  }
  return out;
}

std::optional<Setting> Sema::toSetting(const SVal &v, Loc loc) {
  switch (v.kind) {
  case SVal::Kind::Int:
    if (v.i.isKnown())
      return Setting::ofInt(v.i.value);
    break;
  case SVal::Kind::Float:
    return Setting::ofFloat(v.f);
  case SVal::Kind::Bool:
    return Setting::ofBool(v.b);
  case SVal::Kind::Str:
    return Setting::ofStr(v.s);
  case SVal::Kind::Setting:
    return v.setting;
  default:
    break;
  }
  // Callers check the kind of every value first.
  error(loc, "internal error: expected a number, a string, a bool or a "
             "setting, got " +
                 describe(v));
  return std::nullopt;
}

} // namespace whale::lang
