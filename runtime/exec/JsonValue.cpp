//===- JsonValue.cpp - reading JSON without LLVM --------------------------===//

#include "runtime/exec/JsonValue.h"

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
    while (pos < s.size() &&
           (s[pos] == ' ' || s[pos] == '\t' || s[pos] == '\n' || s[pos] == '\r'))
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

  static int hexDigit(char c) {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    return -1;
  }

  bool hex4(uint32_t &out) {
    out = 0;
    for (int i = 0; i < 4; ++i, ++pos) {
      int d = pos < s.size() ? hexDigit(s[pos]) : -1;
      if (d < 0)
        return fail("four hexadecimal digits after \\u");
      out = out * 16 + static_cast<uint32_t>(d);
    }
    return true;
  }

  static void appendUtf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  bool string(std::string &out) {
    ++pos; // the opening quote
    for (;;) {
      if (pos >= s.size())
        return fail("a closing '\"'");
      char c = s[pos++];
      if (c == '"')
        return true;
      if (static_cast<unsigned char>(c) < 0x20) {
        --pos;
        return fail("no control character in a string (escape it)");
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos >= s.size())
        return fail("an escape after '\\'");
      char e = s[pos++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t cp;
        if (!hex4(cp))
          return false;
        if (cp >= 0xD800 && cp < 0xDC00) { // a surrogate pair
          uint32_t low;
          if (!literal("\\u") || !hex4(low) || low < 0xDC00 || low >= 0xE000)
            return fail("the low half of a surrogate pair");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          return fail("a high surrogate before a low one");
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        --pos;
        return fail("one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u");
      }
    }
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
