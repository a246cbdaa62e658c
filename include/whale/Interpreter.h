//===- whale/Interpreter.h - embedding Whale ----------------------*- C++
//-*-===//
//
// The public C++ API. A host application creates an Interpreter, loads a
// script from a file or a string, reads the diagnostics as values, and asks
// for the program at any stage. Nothing here prints, exits or aborts.
//
//   whale::Interpreter interp;
//   if (!interp.loadFile("model.whl")) {
//     for (const whale::Diagnostic &d : interp.diagnostics()) ...
//   }
//   std::optional<std::string> ir = interp.emit(whale::Stage::Whale);
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_INTERPRETER_H
#define WHALE_INTERPRETER_H

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace mlir {
class MLIRContext;
class ModuleOp;
} // namespace mlir

namespace whale {

/// The stages a program can be shown at (`whale compile --emit=...`).
enum class Stage {
  AST,     ///< the syntax tree of the main script
  Whale,   ///< the whale dialect: the local model with its TaskGraphs
  Grad,    ///< the whale dialect with each model's gradient function
  Train,   ///< and each trained model's train step (forward, backward, update)
  Runtime, ///< the model as calls of the runtime's C ABI (LLVM dialect)
};
std::optional<Stage> parseStage(const std::string &name);

struct Diagnostic {
  enum class Severity { Error, Warning, Note };
  Severity severity = Severity::Error;
  std::string file; ///< empty when the problem has no place in a file
  unsigned line = 0, column = 0;
  std::string message;
  std::vector<Diagnostic> notes;
};

/// A config key's value as a config block writes it: an integer, true or
/// false, or a string (`schedule = "1f1b"`).
using ConfigValue = std::variant<int64_t, bool, std::string>;

/// The value a command line's text spells (`--config num_micro_batch=8`,
/// `--config schedule=1f1b`): an integer, true or false, else the string.
ConfigValue parseConfigValue(const std::string &text);

/// The value as a command line spells it: 8, true, 1f1b.
std::string configText(const ConfigValue &value);

struct InterpreterOptions {
  /// Extra folders searched by `import`, before WHALE_PATH and the stdlib.
  std::vector<std::string> searchPath;
  /// Read WHALE_PATH (colon-separated folders) from the environment.
  bool useEnvironmentPath = true;
  /// Values for symbolic input dimensions, as `--dim B=32` gives them.
  std::map<std::string, int64_t> dims;
  /// Values for top-level constants of the main script, as `--define
  /// LAYERS=96` gives them: each replaces the constant's value (an integer,
  /// a number, true/false or a string, of the kind the script gives it).
  std::map<std::string, std::string> defines;
  /// Config keys to set, as `--config num_micro_batch=8` gives them (typed:
  /// parseConfigValue reads a command line's text): each replaces the
  /// script's config value or adds the key, checked alike.
  std::map<std::string, ConfigValue> configs;
  /// Elaborate every model at this batch instead of its data's (the
  /// planner's per-rank micro-batch).
  std::optional<int64_t> batch;
};

class Interpreter {
public:
  explicit Interpreter(InterpreterOptions options = {});
  ~Interpreter();
  Interpreter(const Interpreter &) = delete;
  Interpreter &operator=(const Interpreter &) = delete;

  /// Parses and checks a script. False when anything is wrong; the reasons
  /// are in diagnostics(). A new load replaces the previous program.
  bool loadFile(const std::string &path);
  bool loadString(const std::string &source,
                  const std::string &name = "<string>");

  /// Every diagnostic of the last load, in the order found.
  std::vector<Diagnostic> diagnostics() const;
  /// The same, as the CLI prints them: `file:line:col: error: message`, the
  /// source line and a caret under the offending text.
  std::string renderDiagnostics() const;
  bool hasErrors() const;

  /// Every file the last load read: the script and the modules it imports
  /// (a command's output must not overwrite one of them).
  std::vector<std::string> filesRead() const;

  /// The loaded program at `stage` as text; nullopt after an error (which
  /// is then in diagnostics()).
  std::optional<std::string> emit(Stage stage);

  /// The whale-dialect module of the loaded program, owned by this
  /// interpreter; a null op after an error.
  mlir::ModuleOp module();
  mlir::MLIRContext &context();

  /// The last loaded script elaborated again with every model at `batch`
  /// (the shapes one rank sees under a plan); null if it fails to load.
  std::unique_ptr<Interpreter> atBatch(int64_t batch) const;

  /// The main script's top-level constants that are numbers, bools or
  /// strings, as (name, value written as the language writes it), in the
  /// order defined; empty after an error.
  std::vector<std::pair<std::string, std::string>> constants() const;

  /// The folders `import` searches, in order, for the last load.
  std::vector<std::string> searchPath(const std::string &scriptPath) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// Where the installed stdlib/ lives (the build tree's when not installed).
std::string stdlibDirectory();

} // namespace whale

#endif
