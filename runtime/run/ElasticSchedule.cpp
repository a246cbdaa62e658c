//===- ElasticSchedule.cpp - when a running job's devices change ----------===//

#include "runtime/run/ElasticSchedule.h"

#include <cerrno>
#include <cstdlib>

namespace whale {

bool parseElasticSchedule(const std::string &text, const std::string &path,
                          ChangeTarget kind, std::vector<ScheduledChange> &out,
                          std::string &error) {
  const bool devices = kind == ChangeTarget::Devices;
  out.clear();
  size_t lineStart = 0;
  for (int line = 1; lineStart <= text.size(); ++line) {
    size_t lineEnd = text.find('\n', lineStart);
    if (lineEnd == std::string::npos)
      lineEnd = text.size();
    std::string s = text.substr(lineStart, lineEnd - lineStart);
    lineStart = lineEnd + 1;
    if (size_t hash = s.find('#'); hash != std::string::npos)
      s.resize(hash);
    auto fail = [&](size_t col, const std::string &what) {
      error = path + ":" + std::to_string(line) + ":" +
              std::to_string(col + 1) + ": error: " + what;
      return false;
    };
    size_t i = s.find_first_not_of(" \t\r");
    if (i == std::string::npos)
      continue;
    size_t stepEnd = s.find_first_of(" \t\r", i);
    std::string step = s.substr(
        i, stepEnd == std::string::npos ? std::string::npos : stepEnd - i);
    char *end = nullptr;
    errno = 0;
    long long at = std::strtoll(step.c_str(), &end, 10);
    if (*end != '\0' || errno != 0 || at < 1)
      return fail(i, "expected the step after which the devices change (a "
                     "positive integer), got '" +
                         step + "'");
    size_t spec = stepEnd == std::string::npos
                      ? std::string::npos
                      : s.find_first_not_of(" \t\r", stepEnd);
    if (spec == std::string::npos)
      return fail(s.size(),
                  devices ? "expected the devices after step " + step +
                                " (a cluster spec such as cpu:2)"
                          : "expected the compiled plan after step " + step +
                                " (a folder whale compile --emit=bundle "
                                "wrote)");
    size_t specEnd = s.find_last_not_of(" \t\r");
    std::string cluster = s.substr(spec, specEnd + 1 - spec);
    if (devices && cluster.find_first_of(" \t") != std::string::npos)
      return fail(spec, "expected one cluster spec, got '" + cluster + "'");
    if (!out.empty() && at <= out.back().afterStep)
      return fail(i, "step " + step + " does not come after step " +
                         std::to_string(out.back().afterStep) +
                         " of the line before");
    out.push_back({at, cluster});
  }
  return true;
}

} // namespace whale
