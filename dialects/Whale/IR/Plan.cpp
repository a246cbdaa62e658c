//===- Plan.cpp - a model's plan, typed -----------------------------------===//

#include "dialects/Whale/IR/Plan.h"

#include "mlir/IR/Builders.h"
#include "support/Limits.h"

#include <cstdint>

using namespace mlir;

namespace whale {

// --- reading ---

namespace {

/// Entry `key` of `dict` as an `A`, converted by `get`; none when absent.
template <class A, class T, class F>
std::optional<T> read(DictionaryAttr dict, StringRef key, F get) {
  if (auto a = dict ? dict.getAs<A>(key) : A())
    return get(a);
  return std::nullopt;
}

} // namespace

#define WHALE_PLAN_READ(accessor, key, T, A, get)                              \
  std::optional<T> ModelPlan::accessor() const {                               \
    return read<A, T>(dict, key, [](A a) { return a.get; });                   \
  }
#define WHALE_PLAN_INT(accessor, key)                                          \
  WHALE_PLAN_READ(accessor, key, int64_t, IntegerAttr, getInt())
#define WHALE_PLAN_INTS(accessor, key)                                         \
  WHALE_PLAN_READ(accessor, key, llvm::ArrayRef<int64_t>, DenseI64ArrayAttr,   \
                  asArrayRef())
#define WHALE_PLAN_REAL(accessor, key)                                         \
  WHALE_PLAN_READ(accessor, key, double, FloatAttr, getValueAsDouble())
#define WHALE_PLAN_REALS(accessor, key)                                        \
  WHALE_PLAN_READ(accessor, key, llvm::ArrayRef<double>, DenseF64ArrayAttr,    \
                  asArrayRef())
#define WHALE_PLAN_ENUM(accessor, key, E)                                      \
  std::optional<E> ModelPlan::accessor() const {                               \
    auto a = dict ? dict.getAs<StringAttr>(key) : StringAttr();                \
    return a ? symbolizeEnum<E>(a.getValue()) : std::nullopt;                  \
  }
#define WHALE_PLAN_ARRAY(accessor, key)                                        \
  ArrayAttr ModelPlan::accessor() const {                                      \
    return dict ? dict.getAs<ArrayAttr>(key) : ArrayAttr();                    \
  }
#include "dialects/Whale/IR/PlanEntries.def"
#undef WHALE_PLAN_READ

// --- checking ---

namespace {

/// What an entry of each kind must be, for the error.
enum class Kind { Int, Ints, Real, Reals, Enum, Array };

struct Entry {
  llvm::StringLiteral key;
  Kind kind;
  /// For an enum: whether `s` spells one, and its spellings for errors.
  bool (*spells)(StringRef s);
  std::string (*spellings)();
};

template <class E> bool spellsEnum(StringRef s) {
  return symbolizeEnum<E>(s).has_value();
}

/// Each enum's values, by number (the generated symbolize functions).
std::optional<PipelineSchedule> enumAt(PipelineSchedule *, uint32_t i) {
  return symbolizePipelineSchedule(i);
}
std::optional<BalanceKind> enumAt(BalanceKind *, uint32_t i) {
  return symbolizeBalanceKind(i);
}

template <class E> std::string spellingsOf() {
  std::string out;
  for (uint32_t i = 0; i < 64; ++i)
    if (std::optional<E> e = enumAt(static_cast<E *>(nullptr), i))
      out += (out.empty() ? "\"" : ", \"") + stringifyEnum(*e).str() + "\"";
  return out;
}

const Entry *entryOf(StringRef key) {
  static const Entry entries[] = {
#define WHALE_PLAN_INT(accessor, key) {key, Kind::Int, nullptr, nullptr},
#define WHALE_PLAN_INTS(accessor, key) {key, Kind::Ints, nullptr, nullptr},
#define WHALE_PLAN_REAL(accessor, key) {key, Kind::Real, nullptr, nullptr},
#define WHALE_PLAN_REALS(accessor, key) {key, Kind::Reals, nullptr, nullptr},
#define WHALE_PLAN_ENUM(accessor, key, E)                                      \
  {key, Kind::Enum, &spellsEnum<E>, &spellingsOf<E>},
#define WHALE_PLAN_ARRAY(accessor, key) {key, Kind::Array, nullptr, nullptr},
#include "dialects/Whale/IR/PlanEntries.def"
  };
  for (const Entry &e : entries)
    if (e.key == key)
      return &e;
  return nullptr;
}

std::string knownKeys() {
  std::string out;
#define WHALE_PLAN_ENTRY(key)                                                  \
  out += (out.empty() ? "" : ", ") + std::string(key);
#define WHALE_PLAN_INT(accessor, key) WHALE_PLAN_ENTRY(key)
#define WHALE_PLAN_INTS(accessor, key) WHALE_PLAN_ENTRY(key)
#define WHALE_PLAN_REAL(accessor, key) WHALE_PLAN_ENTRY(key)
#define WHALE_PLAN_REALS(accessor, key) WHALE_PLAN_ENTRY(key)
#define WHALE_PLAN_ENUM(accessor, key, E) WHALE_PLAN_ENTRY(key)
#define WHALE_PLAN_ARRAY(accessor, key) WHALE_PLAN_ENTRY(key)
#include "dialects/Whale/IR/PlanEntries.def"
#undef WHALE_PLAN_ENTRY
  return out;
}

/// Whether `v` is a value of entry `e`'s type.
bool holds(const Entry &e, Attribute v) {
  switch (e.kind) {
  case Kind::Int: {
    auto i = dyn_cast<IntegerAttr>(v);
    return i && i.getType().isInteger(64);
  }
  case Kind::Ints:
    return isa<DenseI64ArrayAttr>(v);
  case Kind::Real: {
    auto f = dyn_cast<FloatAttr>(v);
    return f && f.getType().isF64();
  }
  case Kind::Reals:
    return isa<DenseF64ArrayAttr>(v);
  case Kind::Enum: {
    auto s = dyn_cast<StringAttr>(v);
    return s && e.spells(s.getValue());
  }
  case Kind::Array:
    return isa<ArrayAttr>(v);
  }
  return false;
}

/// What a value of entry `e` must be, for the error.
std::string typeOf(const Entry &e) {
  switch (e.kind) {
  case Kind::Int:
    return "an i64";
  case Kind::Ints:
    return "an array<i64>";
  case Kind::Real:
    return "an f64";
  case Kind::Reals:
    return "an array<f64>";
  case Kind::Enum:
    return "one of " + e.spellings();
  case Kind::Array:
    return "an array";
  }
  return "";
}

/// The values integer entry `key` may take; nullopt for one without bounds.
std::optional<std::pair<int64_t, int64_t>> rangeOf(StringRef key) {
#define WHALE_PLAN_RANGE(name, least, most)                                    \
  if (key == name)                                                             \
    return std::make_pair(int64_t(least), int64_t(most));
#include "dialects/Whale/IR/PlanEntries.def"
  return std::nullopt;
}

/// The values of an integer entry, or of an array of them.
SmallVector<int64_t> integersOf(Attribute v) {
  if (auto i = dyn_cast<IntegerAttr>(v))
    return {i.getInt()};
  if (auto a = dyn_cast<DenseI64ArrayAttr>(v))
    return SmallVector<int64_t>(a.asArrayRef());
  return {};
}

} // namespace

LogicalResult
ModelPlan::verify(DictionaryAttr dict,
                  llvm::function_ref<InFlightDiagnostic()> emitError) {
  for (NamedAttribute n : dict) {
    StringRef key = n.getName().getValue();
    const Entry *e = entryOf(key);
    if (!e)
      return emitError() << "'" << kPlanAttr << "' has no entry '" << key
                         << "'; its entries are " << knownKeys();
    if (!holds(*e, n.getValue()))
      return emitError() << "'" << kPlanAttr << "' entry '" << key
                         << "' must be " << typeOf(*e) << ", not "
                         << n.getValue();
    if (std::optional<std::pair<int64_t, int64_t>> range = rangeOf(key))
      for (int64_t v : integersOf(n.getValue()))
        if (v < range->first || v > range->second)
          return emitError()
                 << "'" << kPlanAttr << "' entry '" << key << "' must be from "
                 << range->first << " to " << range->second << ", not " << v;
  }
  // The grid places each (stage, replica) on a device of the plan's.
  auto count = [&](StringRef key) -> std::optional<int64_t> {
    auto i = dict.getAs<IntegerAttr>(key);
    return i ? std::optional<int64_t>(i.getInt()) : std::nullopt;
  };
  auto grid = dict.getAs<DenseI64ArrayAttr>("grid");
  std::optional<int64_t> stages = count("stages"), replicas = count("replicas"),
                         devices = count("devices");
  if (grid && stages && replicas && grid.size() != *stages * *replicas)
    return emitError() << "'" << kPlanAttr << "' has a grid of " << grid.size()
                       << " places for " << *stages << " stages of "
                       << *replicas << " replicas";
  if (grid && devices)
    for (int64_t d : grid.asArrayRef())
      if (d >= *devices)
        return emitError() << "'" << kPlanAttr << "' places a stage on device "
                           << d << " of " << *devices;
  return success();
}

// --- writing ---

PlanUpdate &PlanUpdate::add(StringRef key, Attribute value) {
  entries.push_back(
      NamedAttribute(StringAttr::get(fn->getContext(), key), value));
  return *this;
}

#define WHALE_PLAN_SETTER(accessor, key, T, make)                              \
  PlanUpdate &PlanUpdate::accessor(T v) {                                      \
    return add(key, Builder(fn->getContext()).make);                           \
  }
#define WHALE_PLAN_INT(accessor, key)                                          \
  WHALE_PLAN_SETTER(accessor, key, int64_t, getI64IntegerAttr(v))
#define WHALE_PLAN_INTS(accessor, key)                                         \
  WHALE_PLAN_SETTER(accessor, key, llvm::ArrayRef<int64_t>,                    \
                    getDenseI64ArrayAttr(v))
#define WHALE_PLAN_REAL(accessor, key)                                         \
  WHALE_PLAN_SETTER(accessor, key, double, getF64FloatAttr(v))
#define WHALE_PLAN_REALS(accessor, key)                                        \
  WHALE_PLAN_SETTER(accessor, key, llvm::ArrayRef<double>,                     \
                    getDenseF64ArrayAttr(v))
#define WHALE_PLAN_ENUM(accessor, key, E)                                      \
  WHALE_PLAN_SETTER(accessor, key, E, getStringAttr(stringifyEnum(v)))
#define WHALE_PLAN_ARRAY(accessor, key)                                        \
  PlanUpdate &PlanUpdate::accessor(ArrayAttr v) { return add(key, v); }
#include "dialects/Whale/IR/PlanEntries.def"
#undef WHALE_PLAN_SETTER

void PlanUpdate::apply() {
  NamedAttrList list;
  if (ModelPlan old = ModelPlan::of(fn))
    list.append(old.getDictionary().getValue());
  for (const NamedAttribute &e : entries)
    list.set(e.getName(), e.getValue());
  fn->setAttr(kPlanAttr, list.getDictionary(fn->getContext()));
  entries.clear();
}

} // namespace whale
