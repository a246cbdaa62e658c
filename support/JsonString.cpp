//===- JsonString.cpp - JSON strings, written and read --------------------===//

#include "support/JsonString.h"

#include <cstdint>
#include <cstdio>

namespace whale::rt {
namespace {

int hexDigit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/// Four hex digits at `p` into `out`; false with `p` at the first bad one.
bool hex4(const char *&p, const char *end, uint32_t &out) {
  out = 0;
  for (int i = 0; i < 4; ++i, ++p) {
    int d = p < end ? hexDigit(*p) : -1;
    if (d < 0)
      return false;
    out = out * 16 + static_cast<uint32_t>(d);
  }
  return true;
}

void appendUtf8(std::string &out, uint32_t cp) {
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

} // namespace

std::string readJsonString(const char *&p, const char *end, std::string &out) {
  out.clear();
  for (;;) {
    if (p >= end)
      return "a closing '\"'";
    char c = *p;
    if (c == '"') {
      ++p;
      return "";
    }
    if (static_cast<unsigned char>(c) < 0x20)
      return "no control character in a string (escape it)";
    ++p;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (p >= end)
      return "an escape after '\\'";
    switch (*p) {
    case '"':
    case '\\':
    case '/':
      out += *p;
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
      ++p;
      uint32_t cp;
      if (!hex4(p, end, cp))
        return "four hexadecimal digits after \\u";
      if (cp >= 0xD800 && cp < 0xDC00) { // a surrogate pair
        uint32_t low;
        if (end - p < 2 || p[0] != '\\' || p[1] != 'u')
          return "the low half of a surrogate pair";
        p += 2;
        if (!hex4(p, end, low) || low < 0xDC00 || low >= 0xE000)
          return "the low half of a surrogate pair";
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
      } else if (cp >= 0xDC00 && cp < 0xE000) {
        p -= 4;
        return "a high surrogate before a low one";
      }
      appendUtf8(out, cp);
      continue; // p is past the escape
    }
    default:
      return "one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u";
    }
    ++p;
  }
}

std::string jsonQuote(const std::string &s) {
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
