//===- Suggest.h - "did you mean" for misspelled names -----------*- C++
//-*-===//

#ifndef WHALE_LANG_SUGGEST_H
#define WHALE_LANG_SUGGEST_H

#include <string>
#include <vector>

namespace whale::lang {

/// The candidate closest to `name` by edit distance, if it is close enough
/// to be a plausible typo (at most a third of the name's length); else "".
std::string closestMatch(const std::string &name,
                         const std::vector<std::string> &candidates);

/// Names of the builtin functions and setting constructors.
const std::vector<std::string> &builtinNames();

} // namespace whale::lang

#endif
