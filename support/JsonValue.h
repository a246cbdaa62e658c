//===- JsonValue.h - reading JSON without LLVM -------------------*- C++
//-*-===//
//
// The runtime and the runner of compiled plans link no LLVM, so they cannot
// use llvm::json: a compiled plan's manifest and a checkpoint's header are
// read with this.
// This reader is small and strict: one value, then only white space; RFC
// 8259 syntax; nesting at most kMaxDepth deep, so no input can exhaust the
// stack. Errors say the line and column and what was expected.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_SUPPORT_JSONVALUE_H
#define WHALE_SUPPORT_JSONVALUE_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace whale::rt {

class JsonValue {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };
  static constexpr int kMaxDepth = 64;

  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> items;
  std::vector<std::pair<std::string, JsonValue>> members;

  /// The member `key` of an object (the last one when repeated); null when
  /// this is not an object or has none.
  const JsonValue *find(const std::string &key) const;
};

/// Parses all of `text` into `out`; false with `error` ("line L, column C:
/// expected ...") when it is not one JSON value.
bool parseJson(const std::string &text, JsonValue &out, std::string &error);

} // namespace whale::rt

#endif
