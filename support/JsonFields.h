//===- JsonFields.h - reading a JSON object's fields strictly ----*- C++ -*-===//
//
// Configuration a user writes by hand (cluster files, profiles, elastic
// schedules) is read strictly: a field of the wrong type ("count": "2"),
// a fraction where a whole number is meant (2.5), a number out of range
// or not finite (1e999 parses as infinity), or a name that is not a
// field (a misspelt "threds") is an error that names the field, its
// place in the file and what was expected, never a silent default.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_SUPPORT_JSONFIELDS_H
#define WHALE_SUPPORT_JSONFIELDS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <optional>
#include <string>

namespace whale {

/// The fields of one JSON object at `where` ("FILE: nodes[0]", or "FILE:"
/// for the file's top object). Each
/// reader leaves its output alone when the field is absent and returns
/// false, with the reason in `error`, when it is present but wrong.
class JsonFields {
public:
  JsonFields(const llvm::json::Object &object, std::string where,
             std::string &error)
      : object(object), where(std::move(where)), error(error) {}

  /// False when the object has a field not among `known`; the error names
  /// it, and the known field it is closest to.
  bool onlyKnown(llvm::ArrayRef<llvm::StringRef> known);

  bool has(llvm::StringRef key) const { return object.get(key) != nullptr; }

  /// A whole number from `lo` to `hi`.
  bool integer(llvm::StringRef key, int64_t lo, int64_t hi, int64_t &out);
  /// A finite number from `lo` to `hi`.
  bool number(llvm::StringRef key, double lo, double hi, double &out);
  /// A string (`nonEmpty`: not "").
  bool string(llvm::StringRef key, std::string &out, bool nonEmpty = false);
  bool boolean(llvm::StringRef key, bool &out);
  /// An array or an object: null when absent or of another type (then
  /// `error` says so and `failed()` is true).
  const llvm::json::Array *array(llvm::StringRef key);
  const llvm::json::Object *objectField(llvm::StringRef key);

  /// Whether a reader has failed (for the array and object readers).
  bool failed() const { return !error.empty(); }
  /// `where` and a field: "FILE: nodes[0].count".
  std::string at(llvm::StringRef key) const;

private:
  bool wrong(llvm::StringRef key, const std::string &expected);
  /// The field as `T` through `as`: null when absent, or when of another
  /// kind (then with the error).
  template <class T>
  const T *container(llvm::StringRef key,
                     const T *(llvm::json::Value::*as)() const,
                     const char *expected) {
    const llvm::json::Value *v = object.get(key);
    if (!v)
      return nullptr;
    if (const T *t = (v->*as)())
      return t;
    wrong(key, expected);
    return nullptr;
  }

  const llvm::json::Object &object;
  std::string where;
  std::string &error;
};

/// A JSON number as it is written, for messages: 1e999 reads "infinity".
std::string describeJson(const llvm::json::Value &value);

} // namespace whale

#endif
