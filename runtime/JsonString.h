//===- JsonString.h - decoding a JSON string -------------------*- C++ -*-===//
//
// One decoder for the strings of every JSON the runtime reads (a
// checkpoint's header, a compiled plan's manifest): RFC 8259 escapes,
// \u as UTF-8 with surrogate pairs joined, no raw control characters.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_JSONSTRING_H
#define WHALE_RUNTIME_JSONSTRING_H

#include <string>

namespace whale::rt {

/// Reads a JSON string whose opening quote is just before `p`, up to and
/// past its closing quote, into `out`. "" when it did; else what was
/// expected there ("a closing '\"'"), with `p` at the offending character.
std::string readJsonString(const char *&p, const char *end, std::string &out);

} // namespace whale::rt

#endif
