//===- Json.h - writing JSON strings -----------------------------*- C++
//-*-===//

#ifndef WHALE_RUNTIME_JSON_H
#define WHALE_RUNTIME_JSON_H

#include <cstdio>
#include <string>

namespace whale::rt {

/// `s` as a quoted JSON string: quotes, backslashes and control characters
/// escaped. Bytes of UTF-8 pass through.
inline std::string jsonQuote(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += c;
      }
    }
  }
  return out + "\"";
}

} // namespace whale::rt

#endif
