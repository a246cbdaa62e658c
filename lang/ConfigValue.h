//===- ConfigValue.h - a config key's value, typed -----------------*- C++
//-*-===//
//
// What `--config KEY=VALUE`, `whale search`'s candidates and a host
// application's InterpreterOptions::configs set a config key to: an
// integer, true or false, or a string, as a config block writes them. The
// front end checks it like a config block's own value. The public API
// names the same type whale::ConfigValue.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LANG_CONFIGVALUE_H
#define WHALE_LANG_CONFIGVALUE_H

#include <cstdint>
#include <string>
#include <variant>

namespace whale::lang {

using ConfigValue = std::variant<int64_t, bool, std::string>;

/// The value a command line's text spells: an integer, true or false, else
/// the string itself (`--config schedule=gpipe`, without the quotes a
/// config block writes).
ConfigValue configValueOf(const std::string &text);

/// The value as a command line spells it: 4, true, gpipe.
std::string configText(const ConfigValue &value);

} // namespace whale::lang

#endif
