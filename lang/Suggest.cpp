//===- Suggest.cpp - "did you mean" for misspelled names ------------------===//

#include "lang/Suggest.h"

#include <algorithm>

namespace whale::lang {

static size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1,
                         prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closestMatch(const std::string &name,
                         const std::vector<std::string> &candidates) {
  // Names are short; skip the work for absurdly long input.
  if (name.size() > 64)
    return {};
  std::string best;
  // Up to a third of the name may differ; one-letter names get no guess.
  size_t bestDist = name.size() / 3 + 1;
  for (const std::string &c : candidates) {
    if (c == name || c.size() > 64)
      continue;
    size_t d = editDistance(name, c);
    if (d < bestDist) {
      bestDist = d;
      best = c;
    }
  }
  return best;
}

} // namespace whale::lang
