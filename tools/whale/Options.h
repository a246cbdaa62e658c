//===- Options.h - every verb's options, in one table -------------*- C++
//-*-===//
//
// The one description of the CLI's verbs and options: `whale VERB --help`,
// `whale help VERB`, the overview `whale help` prints, the nearest option
// suggested for a misspelt one and the bash completion are all made from
// it, and the parser refuses to read an option the table lacks.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_TOOLS_WHALE_OPTIONS_H
#define WHALE_TOOLS_WHALE_OPTIONS_H

#include <string>
#include <vector>

namespace whale::cli {

struct OptionSpec {
  std::string flag;  ///< "--steps", "-o"
  std::string value; ///< what it takes ("N", "FILE"); "" for a switch
  std::string help;  ///< its meaning, with its default where it has one
};

struct VerbSpec {
  std::string name;     ///< "run"
  std::string operands; ///< "FILE.whl"
  std::string summary;  ///< one line
  std::string details;  ///< more, for `whale help VERB`
  std::vector<OptionSpec> options;
  /// Reads a script: takes -I, --define and --config too.
  bool script = false;
};

/// Every verb, in the order `whale help` lists them.
const std::vector<VerbSpec> &verbs();
/// The verb named `name`; null when there is none.
const VerbSpec *findVerb(const std::string &name);
/// The option `flag` of `verb` (its own or a script verb's shared ones);
/// null when it has none.
const OptionSpec *findOption(const VerbSpec &verb, const std::string &flag);
/// `whale VERB --help`: usage, what it does, each option with its meaning.
std::string verbHelp(const VerbSpec &verb);
/// `whale help`: every verb with its usage line and summary, and what the
/// verbs share.
std::string overview();
/// The option of `verb` nearest to `arg` (for "did you mean"), "" when none
/// is near.
std::string nearestOption(const VerbSpec &verb, const std::string &arg);
/// A bash completion script for `whale`: verbs, then each verb's options,
/// and files for the rest.
std::string bashCompletion();

} // namespace whale::cli

#endif
