//===- Frontend.h - from .whl text to a checked Program ----------*- C++
//-*-===//

#ifndef WHALE_LANG_FRONTEND_H
#define WHALE_LANG_FRONTEND_H

#include "lang/AST.h"
#include "lang/ConfigValue.h"
#include "lang/Diagnostics.h"
#include "lang/Program.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace whale::lang {

struct FrontendOptions {
  /// Folders searched for `import`, after the importing script's own folder.
  /// Typically WHALE_PATH's entries, then the installed stdlib.
  std::vector<std::string> searchPath;
  /// Values for symbolic dimensions of model inputs (`--dim B=32`); the
  /// batch of a train block's data binds the leading one too.
  std::map<std::string, int64_t> dims;
  /// Values for top-level constants of the main script (`--define
  /// LAYERS=96`), as written: an integer, a number, true/false or a string.
  std::map<std::string, std::string> defines;
  /// Config keys of the main script to set (`--config schedule=gpipe`):
  /// each replaces the config block's value or adds the key.
  std::map<std::string, ConfigValue> configs;
  /// When set, every model is elaborated at this batch instead of its
  /// data's: the planner's micro-batch, the shapes one rank sees. The data's
  /// batch is still the one checked against the config.
  std::optional<int64_t> batch;
  /// Limit on statements run while unrolling, so no script hangs the tool.
  int64_t maxSteps = 1000000;
};

/// Owns the sources, the trees and the diagnostics of one compilation.
class Frontend {
public:
  explicit Frontend(FrontendOptions options = {})
      : options(std::move(options)) {}

  /// Reads and parses the main script. False when it could not be read or
  /// has syntax errors (see diagnostics()).
  bool parseFile(const std::string &path);
  bool parseString(const std::string &source, const std::string &name);

  /// The main file's tree (after parseFile/parseString).
  const FileAST *mainAST() const { return main; }

  /// Resolves imports, checks every rule of the language and elaborates the
  /// models. Returns a Program only when no error was found.
  std::optional<Program> analyze();

  /// Parses a module for `import` (Sema found and read it); a module read
  /// before is not parsed again.
  const FileAST *loadModule(const std::string &path, std::string text);

  /// The paths of every file read: the main script and the modules it
  /// imports (for commands that must never write over their inputs).
  std::vector<std::string> filesRead() const;

  const SourceManager &sources() const { return srcs; }
  DiagnosticEngine &diagnostics() { return diags; }
  const FrontendOptions &getOptions() const { return options; }
  std::string renderDiagnostics() const { return renderAll(srcs, diags.all()); }

private:
  FrontendOptions options;
  SourceManager srcs;
  DiagnosticEngine diags;
  std::vector<std::unique_ptr<FileAST>> files;
  std::map<std::string, const FileAST *> modulesByPath;
  const FileAST *main = nullptr;
};

/// Reads a whole script (a regular file of at most rt::kMaxTextInput
/// bytes); nullopt when it cannot be read, with why in `error`.
std::optional<std::string> readFile(const std::string &path,
                                    std::string *error = nullptr);

} // namespace whale::lang

#endif
