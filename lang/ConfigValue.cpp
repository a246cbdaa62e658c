//===- ConfigValue.cpp - a config key's value, typed ----------------------===//

#include "lang/ConfigValue.h"

#include <cerrno>
#include <cstdlib>

namespace whale::lang {

ConfigValue configValueOf(const std::string &text) {
  const char *begin = text.c_str();
  char *end = nullptr;
  errno = 0;
  long long i = std::strtoll(begin, &end, 10);
  if (!text.empty() && *end == '\0' && errno == 0)
    return int64_t(i);
  if (text == "true" || text == "false")
    return text == "true";
  return text;
}

std::string configText(const ConfigValue &value) {
  if (const auto *i = std::get_if<int64_t>(&value))
    return std::to_string(*i);
  if (const auto *b = std::get_if<bool>(&value))
    return *b ? "true" : "false";
  return std::get<std::string>(value);
}

} // namespace whale::lang
