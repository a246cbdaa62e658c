//===- Diagnostics.h - errors as values ---------------------------*- C++
//-*-===//
//
// The front end never prints and never exits: every problem becomes a
// Diagnostic that the caller renders, counts or hands to a host application.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LANG_DIAGNOSTICS_H
#define WHALE_LANG_DIAGNOSTICS_H

#include "lang/Source.h"

#include <string>
#include <vector>

namespace whale::lang {

enum class Severity { Error, Warning, Note };

struct Diagnostic {
  Severity severity = Severity::Error;
  Loc loc;
  std::string message;
  std::vector<Diagnostic> notes;
};

class DiagnosticEngine {
public:
  /// Stop collecting after this many errors: past it, more are noise.
  static constexpr size_t kMaxErrors = 50;

  Diagnostic &error(Loc loc, std::string message);
  Diagnostic &warning(Loc loc, std::string message);
  /// Attaches a note to the last diagnostic reported.
  void note(Loc loc, std::string message);

  size_t errorCount() const { return errors; }
  bool hasErrors() const { return errors != 0; }
  bool tooMany() const { return errors >= kMaxErrors; }
  const std::vector<Diagnostic> &all() const { return diags; }

private:
  std::vector<Diagnostic> diags;
  Diagnostic dropped; // sink for diagnostics past kMaxErrors
  size_t errors = 0;
};

/// `file:line:col: error: message`, the source line, and a caret line under
/// the offending text; notes follow in the same form.
std::string render(const SourceManager &sources, const Diagnostic &diag);
std::string renderAll(const SourceManager &sources,
                      const std::vector<Diagnostic> &diags);

} // namespace whale::lang

#endif
