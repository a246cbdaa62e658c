//===- Lexer.h - turns .whl text into tokens ---------------------*- C++
//-*-===//

#ifndef WHALE_LANG_LEXER_H
#define WHALE_LANG_LEXER_H

#include "lang/Diagnostics.h"
#include "lang/Token.h"

#include <string_view>

namespace whale::lang {

/// Whether `word` lexes as one identifier: a name a script (or a REPL
/// session's tensor) can be called by, not a keyword.
bool isPlainIdentifier(std::string_view word);

/// Newlines end statements, as in Python, except inside parentheses and
/// brackets where they are ignored; runs of blank lines and comments make one
/// Newline token. Braces do not hide newlines: they hold statements.
class Lexer {
public:
  Lexer(std::string_view text, uint32_t file, DiagnosticEngine &diags)
      : text(text), file(file), diags(diags) {}

  Token next();

private:
  char peek(size_t ahead = 0) const {
    return pos + ahead < text.size() ? text[pos + ahead] : '\0';
  }
  char advance();
  Loc locFrom(size_t start, uint32_t line, uint32_t col) const;
  Token make(Tok kind, size_t start, uint32_t line, uint32_t col);
  Token lexNumber(size_t start, uint32_t line, uint32_t col);
  Token lexString(size_t start, uint32_t line, uint32_t col);
  Token lexIdentifier(size_t start, uint32_t line, uint32_t col);

  std::string_view text;
  uint32_t file;
  DiagnosticEngine &diags;
  size_t pos = 0;
  uint32_t line = 1, col = 1;
  int nesting = 0;            // depth of ( and [
  bool lastWasNewline = true; // suppress leading and repeated newlines
};

} // namespace whale::lang

#endif
