//===- Repl.h - whale repl: a session of definitions and commands -*- C++
//-*-===//
//
// `whale repl` keeps a session: the definitions typed so far (imports,
// constants, defs, models, config and train blocks) make one script, checked
// whole after each input, so a definition that breaks it is refused and the
// session stays as it was. A definition of a name already defined replaces
// it, with a note. An expression is evaluated against the session and its
// value printed (`2 * D`; a tensor expression is computed on this CPU and
// printed as numpy does); constants print their values when defined.
// Commands start with ':' (`:help` lists them); the ones that plan, simulate
// or train run the same verbs as the CLI on the session's script.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_REPL_REPL_H
#define WHALE_REPL_REPL_H

#include "repl/ReplTensors.h"
#include "whale/Interpreter.h"

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace whale {

/// Runs a verb of the CLI (`{"plan", SCRIPT, "--cluster", "cpu:2"}`) as
/// `whale` would, printing what it prints; returns its exit status.
using VerbRunner = std::function<int(const std::vector<std::string> &args)>;

struct ReplOptions {
  InterpreterOptions interpreter;
  VerbRunner runVerb; ///< for :plan, :sim, :train and :devices
  /// A terminal: lines are read with editing, history (kept in
  /// `historyPath`) and completion, behind prompts.
  bool interactive = false;
  std::string historyPath;
};

class ReplSession {
public:
  explicit ReplSession(ReplOptions options);
  ~ReplSession();

  /// Whether `text` is a whole input: its brackets close, outside strings
  /// and comments (an input may span lines until they do).
  static bool complete(const std::string &text);

  /// Handles one whole input, writing results to `out` and errors to
  /// `err`. False once the session is to end (`:quit`).
  bool handle(const std::string &input, std::ostream &out, std::ostream &err);

  /// The session's definitions as one script.
  std::string script() const;

  /// What may complete `word` (the text before the cursor back to a space
  /// or bracket): commands, the session's names, builtins, stdlib members.
  std::vector<std::string> completions(const std::string &word) const;

private:
  struct Definition {
    std::string key;  ///< "model m", "def f", "constant D", "config", ...
    std::string text; ///< as typed, ending in a newline
    /// Characters put before what was typed on its first line (an
    /// expression is checked as `_ = EXPR`): diagnostics leave them out.
    unsigned shift = 0;
  };
  /// Adds the definitions of `text` (named `name` in diagnostics); false
  /// when they are refused (the session is unchanged).
  bool define(const std::string &text, std::ostream &out, std::ostream &err,
              const std::string &name);
  bool evaluate(const std::string &expr, std::ostream &out, std::ostream &err);
  /// `expr` as a tensor, computed on this CPU and printed; false (errors
  /// in `err`) when it is not one the session can compute.
  /// With `assignTo`, the value is kept as the session's tensor of that
  /// name (which later expressions read) rather than printed.
  bool evaluateTensor(const std::string &expr, std::ostream &out,
                      std::ostream &err, const std::string &assignTo = "");
  /// Whether `expr` names one of the session's tensors or randn (so its
  /// errors are those of a tensor expression, not of a constant).
  bool readsTensors(const std::string &expr) const;
  bool command(const std::string &line, std::ostream &out, std::ostream &err);
  /// Loads `defs` as the session's script; false (diagnostics in `err`,
  /// placed in the inputs they came from) when it has errors.
  bool check(const std::vector<Definition> &defs, std::ostream &err,
             const std::string &name);
  /// Runs a CLI verb on the session's script, written to a file in the
  /// current folder (so relative paths in it mean what they mean here).
  int runOnScript(const std::string &verb, const std::vector<std::string> &args,
                  std::ostream &err);

  ReplOptions options;
  std::vector<Definition> defs;
  std::unique_ptr<Interpreter> interp;
  std::vector<std::string> stdlibMembers; ///< "nn.linear", ...
  /// Tensors computed by `x = <tensor expression>`, in order.
  NamedTensors tensors;
  /// What `randn` draws from: seeded, so a session replays alike.
  std::mt19937_64 rng{0};
};

/// Reads inputs from `in` until its end or `:quit` (from the terminal, with
/// LLVM's LineEditor, when options.interactive); returns the exit status (0,
/// or 1 when the input ended inside an unfinished input).
int runRepl(std::istream &in, std::ostream &out, std::ostream &err,
            ReplOptions options);

} // namespace whale

#endif
