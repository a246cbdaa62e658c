//===- JsonString.h - JSON strings, written and read -----------*- C++ -*-===//
//
// One encoder and one decoder for the strings of every JSON Whale writes
// or reads without LLVM (a checkpoint's header, a compiled plan's
// manifest, a trace): RFC 8259 escapes, \u as UTF-8 with surrogate pairs
// joined, no raw control characters.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_SUPPORT_JSONSTRING_H
#define WHALE_SUPPORT_JSONSTRING_H

#include <string>

namespace whale::rt {

/// `s` as a quoted JSON string: quotes, backslashes and control characters
/// escaped. Bytes of UTF-8 pass through.
std::string jsonQuote(const std::string &s);

/// Reads a JSON string whose opening quote is just before `p`, up to and
/// past its closing quote, into `out`. "" when it did; else what was
/// expected there ("a closing '\"'"), with `p` at the offending character.
std::string readJsonString(const char *&p, const char *end, std::string &out);

} // namespace whale::rt

#endif
