//===- Suggest.cpp - "did you mean" for misspelled names ------------------===//

#include "lang/Suggest.h"

#include <algorithm>

namespace whale::lang {

/// Optimal string alignment distance: insertions, deletions, substitutions
/// and transpositions of neighbours each cost 1 (so `lni` is 1 from `lin`).
static size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<std::vector<size_t>> d(a.size() + 1,
                                     std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1,
                          d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
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
