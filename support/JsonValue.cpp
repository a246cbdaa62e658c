//===- JsonValue.cpp - reading JSON without LLVM --------------------------===//

#include "support/JsonValue.h"

#include "support/JsonString.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace whale::rt {

const JsonValue *JsonValue::find(const std::string &key) const {
  const JsonValue *found = nullptr;
  for (const auto &[k, v] : members)
    if (k == key)
      found = &v;
  return found;
}

namespace {

class Parser {
public:
  explicit Parser(const std::string &text) : s(text) {}

  bool parseAll(JsonValue &out, std::string &error) {
    bool ok = value(out, 0);
    if (ok) {
      space();
      if (pos < s.size())
        ok = fail("the end of the input after the value");
    }
    if (!ok)
      error = message;
    return ok;
  }

private:
  const std::string &s;
  size_t pos = 0;
  std::string message;

  /// Records "line L, column C: expected `what`" at the current position.
  bool fail(const std::string &what) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos && i < s.size(); ++i) {
      if (s[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    message = "line " + std::to_string(line) + ", column " +
              std::to_string(column) + ": expected " + what;
    return false;
  }

  void space() {
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t' ||
                              s[pos] == '\n' || s[pos] == '\r'))
      ++pos;
  }

  bool literal(const char *word) {
    size_t n = std::char_traits<char>::length(word);
    if (s.compare(pos, n, word) != 0)
      return false;
    pos += n;
    return true;
  }

  bool value(JsonValue &out, int depth) {
    space();
    if (pos >= s.size())
      return fail("a value");
    char c = s[pos];
    if (c == '{' || c == '[') {
      if (depth >= JsonValue::kMaxDepth)
        return fail("at most " + std::to_string(JsonValue::kMaxDepth) +
                    " levels of nesting");
      return c == '{' ? object(out, depth) : array(out, depth);
    }
    if (c == '"') {
      out.kind = JsonValue::Kind::String;
      return string(out.string);
    }
    if (literal("true") || literal("false")) {
      out.kind = JsonValue::Kind::Bool;
      out.boolean = c == 't';
      return true;
    }
    if (literal("null")) {
      out.kind = JsonValue::Kind::Null;
      return true;
    }
    return number(out);
  }

  bool object(JsonValue &out, int depth) {
    out.kind = JsonValue::Kind::Object;
    ++pos;
    space();
    if (pos < s.size() && s[pos] == '}') {
      ++pos;
      return true;
    }
    for (;;) {
      space();
      if (pos >= s.size() || s[pos] != '"')
        return fail("a member name in double quotes");
      std::string key;
      if (!string(key))
        return false;
      space();
      if (pos >= s.size() || s[pos] != ':')
        return fail("':' after the member name");
      ++pos;
      out.members.emplace_back(std::move(key), JsonValue());
      if (!value(out.members.back().second, depth + 1))
        return false;
      space();
      if (pos < s.size() && s[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < s.size() && s[pos] == '}') {
        ++pos;
        return true;
      }
      return fail("',' or '}' in an object");
    }
  }

  bool array(JsonValue &out, int depth) {
    out.kind = JsonValue::Kind::Array;
    ++pos;
    space();
    if (pos < s.size() && s[pos] == ']') {
      ++pos;
      return true;
    }
    for (;;) {
      out.items.emplace_back();
      if (!value(out.items.back(), depth + 1))
        return false;
      space();
      if (pos < s.size() && s[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < s.size() && s[pos] == ']') {
        ++pos;
        return true;
      }
      return fail("',' or ']' in an array");
    }
  }

  bool string(std::string &out) {
    ++pos; // the opening quote
    const char *p = s.data() + pos;
    std::string why = readJsonString(p, s.data() + s.size(), out);
    pos = static_cast<size_t>(p - s.data());
    return why.empty() || fail(why);
  }

  bool number(JsonValue &out) {
    size_t start = pos;
    auto digits = [&] {
      size_t from = pos;
      while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9')
        ++pos;
      return pos > from;
    };
    if (pos < s.size() && s[pos] == '-')
      ++pos;
    if (pos < s.size() && s[pos] == '0')
      ++pos;
    else if (!digits())
      return fail("a value (an object, array, string, number, true, false "
                  "or null)");
    if (pos < s.size() && s[pos] == '.') {
      ++pos;
      if (!digits())
        return fail("digits after the decimal point");
    }
    if (pos < s.size() && (s[pos] == 'e' || s[pos] == 'E')) {
      ++pos;
      if (pos < s.size() && (s[pos] == '+' || s[pos] == '-'))
        ++pos;
      if (!digits())
        return fail("digits in the exponent");
    }
    std::string text = s.substr(start, pos - start);
    errno = 0;
    double v = std::strtod(text.c_str(), nullptr);
    if (errno == ERANGE && std::isinf(v)) {
      pos = start;
      return fail("a number within the range of a double");
    }
    out.kind = JsonValue::Kind::Number;
    out.number = v;
    return true;
  }
};

} // namespace

bool parseJson(const std::string &text, JsonValue &out, std::string &error) {
  out = JsonValue();
  return Parser(text).parseAll(out, error);
}

} // namespace whale::rt
