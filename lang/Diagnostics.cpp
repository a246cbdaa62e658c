//===- Diagnostics.cpp - errors as values ---------------------------------===//

#include "lang/Diagnostics.h"

#include <algorithm>

namespace whale::lang {

Diagnostic &DiagnosticEngine::error(Loc loc, std::string message) {
  if (errors >= kMaxErrors) {
    dropped = Diagnostic{};
    return dropped;
  }
  ++errors;
  diags.push_back({Severity::Error, loc, std::move(message), {}});
  if (errors == kMaxErrors)
    diags.back().notes.push_back(
        {Severity::Note, Loc{}, "too many errors; stopping here", {}});
  return diags.back();
}

Diagnostic &DiagnosticEngine::warning(Loc loc, std::string message) {
  diags.push_back({Severity::Warning, loc, std::move(message), {}});
  return diags.back();
}

void DiagnosticEngine::note(Loc loc, std::string message) {
  if (diags.empty())
    return;
  diags.back().notes.push_back({Severity::Note, loc, std::move(message), {}});
}

static const char *severityName(Severity s) {
  switch (s) {
  case Severity::Error:
    return "error";
  case Severity::Warning:
    return "warning";
  case Severity::Note:
    return "note";
  }
  return "error";
}

static void renderOne(const SourceManager &sources, const Diagnostic &d,
                      std::string &out) {
  if (d.loc.valid() && d.loc.file < sources.size()) {
    out += sources.path(d.loc.file) + ":" + std::to_string(d.loc.line) + ":" +
           std::to_string(d.loc.col) + ": ";
  } else {
    out += "whale: ";
  }
  out += severityName(d.severity);
  out += ": " + d.message + "\n";
  if (!d.loc.valid() || d.loc.file >= sources.size())
    return;
  std::string_view line = sources.lineText(d.loc.file, d.loc.line);
  if (line.empty() && d.loc.col > 1)
    return;
  // A long line (a generated script, a line of 100,000 brackets) shows a
  // window around the column, so one diagnostic stays a few lines long.
  constexpr size_t kBefore = 60, kWindow = 120;
  std::string shown(line);
  uint32_t col = d.loc.col;
  size_t tail = 0; // the "..." after the window
  if (line.size() > kWindow + 20) {
    // A column past the line's end (the end of input) shows the line's end.
    size_t from = std::min<size_t>(col > kBefore + 1 ? col - 1 - kBefore : 0,
                                   line.size() - kWindow);
    tail = from + kWindow < line.size() ? 3 : 0;
    shown = std::string(from ? "..." : "") +
            std::string(line.substr(from, kWindow)) + (tail ? "..." : "");
    col = static_cast<uint32_t>(col - from + (from ? 3 : 0));
  }
  out += "  ";
  out += shown;
  out += "\n  ";
  // Keep tabs so the caret lines up under tab-indented source.
  for (uint32_t i = 1; i < col && i - 1 < shown.size(); ++i)
    out += shown[i - 1] == '\t' ? '\t' : ' ';
  out += '^';
  size_t text = shown.size() - tail;
  size_t room = text >= col ? text - col : 0;
  size_t tildes = d.loc.len > 1 ? std::min<size_t>(d.loc.len - 1, room) : 0;
  out.append(tildes, '~');
  out += '\n';
}

std::string render(const SourceManager &sources, const Diagnostic &diag) {
  std::string out;
  renderOne(sources, diag, out);
  for (const Diagnostic &n : diag.notes)
    renderOne(sources, n, out);
  return out;
}

std::string renderAll(const SourceManager &sources,
                      const std::vector<Diagnostic> &diags) {
  std::string out;
  for (const Diagnostic &d : diags)
    out += render(sources, d);
  return out;
}

} // namespace whale::lang
