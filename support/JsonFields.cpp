//===- JsonFields.cpp - reading a JSON object's fields strictly -----------===//

#include "support/JsonFields.h"

#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <cstdio>

namespace whale {

namespace {
std::string shortNumber(double d) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", d);
  return text;
}
} // namespace

std::string describeJson(const llvm::json::Value &value) {
  switch (value.kind()) {
  case llvm::json::Value::Null:
    return "null";
  case llvm::json::Value::Boolean:
    return *value.getAsBoolean() ? "true" : "false";
  case llvm::json::Value::Number: {
    double d = *value.getAsNumber();
    if (std::isinf(d))
      return d > 0 ? "infinity" : "-infinity";
    if (auto i = value.getAsInteger())
      return std::to_string(*i);
    return shortNumber(d);
  }
  case llvm::json::Value::String:
    return "a string";
  case llvm::json::Value::Array:
    return "an array";
  case llvm::json::Value::Object:
    return "an object";
  }
  return "a value";
}

std::string JsonFields::at(llvm::StringRef key) const {
  // The top of a file is "FILE:", a field in it "FILE: key".
  return where + (llvm::StringRef(where).ends_with(":") ? " " : ".") +
         key.str();
}

bool JsonFields::wrong(llvm::StringRef key, const std::string &expected) {
  const llvm::json::Value *v = object.get(key);
  error = at(key) + " must be " + expected + ", not " +
          (v ? describeJson(*v) : std::string("missing"));
  return false;
}

bool JsonFields::onlyKnown(llvm::ArrayRef<llvm::StringRef> known) {
  for (const auto &[key, value] : object) {
    llvm::StringRef name(key);
    if (llvm::is_contained(known, name))
      continue;
    llvm::StringRef closest;
    unsigned best = 3; // a typo: at most two edits away
    for (llvm::StringRef k : known)
      if (unsigned d = name.edit_distance(k, true, best); d < best) {
        best = d;
        closest = k;
      }
    std::string list;
    for (llvm::StringRef k : known)
      list += (list.empty() ? "" : ", ") + k.str();
    error = where + ": unknown field \"" + name.str() + "\"" +
            (closest.empty() ? "" : " (did you mean \"" + closest.str() +
                                        "\"?)") +
            "; known: " + list;
    return false;
  }
  return true;
}

bool JsonFields::integer(llvm::StringRef key, int64_t lo, int64_t hi,
                         int64_t &out) {
  const llvm::json::Value *v = object.get(key);
  if (!v)
    return true;
  std::optional<int64_t> i = v->getAsInteger();
  if (!i || *i < lo || *i > hi)
    return wrong(key, "a whole number from " + std::to_string(lo) + " to " +
                          std::to_string(hi));
  out = *i;
  return true;
}

bool JsonFields::number(llvm::StringRef key, double lo, double hi,
                        double &out) {
  const llvm::json::Value *v = object.get(key);
  if (!v)
    return true;
  std::optional<double> d = v->getAsNumber();
  if (!d || !std::isfinite(*d) || *d < lo || *d > hi)
    return wrong(key, "a finite number from " + shortNumber(lo) + " to " +
                          shortNumber(hi));
  out = *d;
  return true;
}

bool JsonFields::string(llvm::StringRef key, std::string &out,
                        bool nonEmpty) {
  const llvm::json::Value *v = object.get(key);
  if (!v)
    return true;
  std::optional<llvm::StringRef> s = v->getAsString();
  if (!s || (nonEmpty && s->empty()))
    return wrong(key, nonEmpty ? "a non-empty string" : "a string");
  out = s->str();
  return true;
}

bool JsonFields::boolean(llvm::StringRef key, bool &out) {
  const llvm::json::Value *v = object.get(key);
  if (!v)
    return true;
  std::optional<bool> b = v->getAsBoolean();
  if (!b)
    return wrong(key, "true or false");
  out = *b;
  return true;
}

const llvm::json::Array *JsonFields::array(llvm::StringRef key) {
  return container(key, &llvm::json::Value::getAsArray, "an array");
}

const llvm::json::Object *JsonFields::objectField(llvm::StringRef key) {
  return container(key, &llvm::json::Value::getAsObject, "an object");
}

} // namespace whale
