//===- Lexer.cpp - turns .whl text into tokens ----------------------------===//

#include "lang/Lexer.h"

#include <cstdio>

#include <cerrno>
#include <cstdlib>
#include <limits>

namespace whale::lang {

const char *describe(Tok kind) {
  switch (kind) {
  case Tok::Eof:
    return "end of file";
  case Tok::Newline:
    return "end of line";
  case Tok::Error:
    return "invalid token";
  case Tok::Ident:
    return "identifier";
  case Tok::Int:
    return "integer";
  case Tok::Float:
    return "number";
  case Tok::String:
    return "string";
  case Tok::KwImport:
    return "'import'";
  case Tok::KwAs:
    return "'as'";
  case Tok::KwConfig:
    return "'config'";
  case Tok::KwDef:
    return "'def'";
  case Tok::KwModel:
    return "'model'";
  case Tok::KwTrain:
    return "'train'";
  case Tok::KwReturn:
    return "'return'";
  case Tok::KwFor:
    return "'for'";
  case Tok::KwIn:
    return "'in'";
  case Tok::KwReplicate:
    return "'replicate'";
  case Tok::KwSplit:
    return "'split'";
  case Tok::KwDefault:
    return "'default'";
  case Tok::KwTrue:
    return "'true'";
  case Tok::KwFalse:
    return "'false'";
  case Tok::LParen:
    return "'('";
  case Tok::RParen:
    return "')'";
  case Tok::LBracket:
    return "'['";
  case Tok::RBracket:
    return "']'";
  case Tok::LBrace:
    return "'{'";
  case Tok::RBrace:
    return "'}'";
  case Tok::Comma:
    return "','";
  case Tok::Colon:
    return "':'";
  case Tok::Semicolon:
    return "';'";
  case Tok::Dot:
    return "'.'";
  case Tok::Assign:
    return "'='";
  case Tok::Arrow:
    return "'->'";
  case Tok::At:
    return "'@'";
  case Tok::Plus:
    return "'+'";
  case Tok::Minus:
    return "'-'";
  case Tok::Star:
    return "'*'";
  case Tok::Slash:
    return "'/'";
  }
  return "token";
}

char Lexer::advance() {
  char c = text[pos++];
  if (c == '\n') {
    ++line;
    col = 1;
  } else {
    ++col;
  }
  return c;
}

Loc Lexer::locFrom(size_t start, uint32_t l, uint32_t c) const {
  size_t len = pos > start ? pos - start : 1;
  return Loc{file, l, c, static_cast<uint32_t>(len)};
}

Token Lexer::make(Tok kind, size_t start, uint32_t l, uint32_t c) {
  Token t;
  t.kind = kind;
  t.loc = locFrom(start, l, c);
  t.text = std::string(text.substr(start, pos - start));
  lastWasNewline = kind == Tok::Newline;
  return t;
}

static bool isIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool isDigit(char c) { return c >= '0' && c <= '9'; }

Token Lexer::next() {
  for (;;) {
    char c = peek();
    if (c == '\0' && pos >= text.size()) {
      if (!lastWasNewline) {
        // A final statement needs no newline after it.
        Token t;
        t.kind = Tok::Newline;
        t.loc = Loc{file, line, col, 1};
        lastWasNewline = true;
        return t;
      }
      Token t;
      t.kind = Tok::Eof;
      t.loc = Loc{file, line, col, 1};
      return t;
    }
    if (c == '#') {
      while (pos < text.size() && peek() != '\n')
        advance();
      continue;
    }
    if (c == '\n') {
      size_t start = pos;
      uint32_t l = line, cl = col;
      advance();
      if (nesting > 0 || lastWasNewline)
        continue;
      return make(Tok::Newline, start, l, cl);
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      advance();
      continue;
    }
    break;
  }

  size_t start = pos;
  uint32_t l = line, cl = col;
  char c = peek();
  if (isIdentStart(c))
    return lexIdentifier(start, l, cl);
  if (isDigit(c) || (c == '.' && isDigit(peek(1))))
    return lexNumber(start, l, cl);
  if (c == '"' || c == '\'')
    return lexString(start, l, cl);

  advance();
  switch (c) {
  case '(':
    ++nesting;
    return make(Tok::LParen, start, l, cl);
  case ')':
    if (nesting > 0)
      --nesting;
    return make(Tok::RParen, start, l, cl);
  case '[':
    ++nesting;
    return make(Tok::LBracket, start, l, cl);
  case ']':
    if (nesting > 0)
      --nesting;
    return make(Tok::RBracket, start, l, cl);
  // A brace opens statements again even inside parentheses: the parser will
  // report the misplaced brace, and newlines must not be lost after it.
  case '{':
    nesting = 0;
    return make(Tok::LBrace, start, l, cl);
  case '}':
    nesting = 0;
    return make(Tok::RBrace, start, l, cl);
  case ',':
    return make(Tok::Comma, start, l, cl);
  case ':':
    return make(Tok::Colon, start, l, cl);
  case ';':
    return make(Tok::Semicolon, start, l, cl);
  case '.':
    return make(Tok::Dot, start, l, cl);
  case '=':
    return make(Tok::Assign, start, l, cl);
  case '@':
    return make(Tok::At, start, l, cl);
  case '+':
    return make(Tok::Plus, start, l, cl);
  case '*':
    return make(Tok::Star, start, l, cl);
  case '/':
    return make(Tok::Slash, start, l, cl);
  case '-':
    if (peek() == '>') {
      advance();
      return make(Tok::Arrow, start, l, cl);
    }
    return make(Tok::Minus, start, l, cl);
  default:
    break;
  }
  // Swallow the rest of a UTF-8 sequence so one bad character is one error.
  while (pos < text.size() &&
         (static_cast<unsigned char>(peek()) & 0xC0) == 0x80)
    advance();
  Token t = make(Tok::Error, start, l, cl);
  unsigned char uc = static_cast<unsigned char>(c);
  if (uc >= 0x20 && uc < 0x7f)
    diags.error(t.loc, std::string("unexpected character '") + c + "'");
  else
    diags.error(t.loc, "unexpected byte 0x" +
                           std::string(1, "0123456789abcdef"[uc >> 4]) +
                           std::string(1, "0123456789abcdef"[uc & 15]) +
                           " (only ASCII is allowed outside strings)");
  return t;
}

/// The keyword `word` is, or Tok::Ident.
static Tok wordKind(std::string_view word) {
  static const struct {
    const char *word;
    Tok kind;
  } keywords[] = {
      {"import", Tok::KwImport}, {"as", Tok::KwAs},
      {"config", Tok::KwConfig}, {"def", Tok::KwDef},
      {"model", Tok::KwModel},   {"train", Tok::KwTrain},
      {"return", Tok::KwReturn}, {"for", Tok::KwFor},
      {"in", Tok::KwIn},         {"replicate", Tok::KwReplicate},
      {"split", Tok::KwSplit},   {"default", Tok::KwDefault},
      {"true", Tok::KwTrue},     {"false", Tok::KwFalse},
  };
  for (const auto &k : keywords)
    if (word == k.word)
      return k.kind;
  return Tok::Ident;
}

Token Lexer::lexIdentifier(size_t start, uint32_t l, uint32_t cl) {
  while (isIdentStart(peek()) || isDigit(peek()))
    advance();
  return make(wordKind(text.substr(start, pos - start)), start, l, cl);
}

bool isPlainIdentifier(std::string_view word) {
  if (word.empty() || !isIdentStart(word.front()))
    return false;
  for (char c : word)
    if (!isIdentStart(c) && !isDigit(c))
      return false;
  return wordKind(word) == Tok::Ident;
}

Token Lexer::lexNumber(size_t start, uint32_t l, uint32_t cl) {
  bool isFloat = false;
  std::string digits;
  auto takeDigits = [&]() {
    while (isDigit(peek()) || (peek() == '_' && isDigit(peek(1)))) {
      char d = advance();
      if (d != '_')
        digits += d;
    }
  };
  takeDigits();
  if (peek() == '.' && isDigit(peek(1))) {
    isFloat = true;
    digits += advance();
    takeDigits();
  } else if (peek() == '.' && !isIdentStart(peek(1))) {
    // "1." is a float, but "x.1" style attribute access never starts here.
    isFloat = true;
    digits += advance();
  }
  if (peek() == 'e' || peek() == 'E') {
    size_t save = pos;
    uint32_t sl = line, sc = col;
    std::string exp(1, advance());
    if (peek() == '+' || peek() == '-')
      exp += advance();
    if (isDigit(peek())) {
      isFloat = true;
      digits += exp;
      takeDigits();
    } else {
      pos = save;
      line = sl;
      col = sc;
    }
  }
  if (isIdentStart(peek())) {
    while (isIdentStart(peek()) || isDigit(peek()))
      advance();
    Token t = make(Tok::Error, start, l, cl);
    diags.error(t.loc, "malformed number '" + t.text + "'");
    return t;
  }
  Token t = make(isFloat ? Tok::Float : Tok::Int, start, l, cl);
  errno = 0;
  if (isFloat) {
    t.floatValue = std::strtod(digits.c_str(), nullptr);
    if (errno == ERANGE) {
      diags.error(t.loc, "number '" + t.text + "' is out of range");
      t.kind = Tok::Error;
    }
  } else {
    unsigned long long v = std::strtoull(digits.c_str(), nullptr, 10);
    if (errno == ERANGE || v > static_cast<unsigned long long>(
                                   std::numeric_limits<int64_t>::max())) {
      diags.error(t.loc, "integer '" + t.text + "' does not fit in 64 bits");
      t.kind = Tok::Error;
    } else {
      t.intValue = static_cast<int64_t>(v);
    }
  }
  return t;
}

Token Lexer::lexString(size_t start, uint32_t l, uint32_t cl) {
  char quote = advance();
  std::string value;
  while (pos < text.size() && peek() != quote && peek() != '\n') {
    // Where the backslash of an escape is: the escaped character may be a
    // newline, after which the line and column are the next line's.
    const uint32_t atLine = line, atCol = col;
    char c = advance();
    if (c == '\\' && pos < text.size()) {
      char e = advance();
      switch (e) {
      case 'n':
        value += '\n';
        break;
      case 't':
        value += '\t';
        break;
      case '\\':
        value += '\\';
        break;
      case '"':
        value += '"';
        break;
      case '\'':
        value += '\'';
        break;
      default: {
        unsigned char u = static_cast<unsigned char>(e);
        std::string shown;
        if (e == '\n') {
          diags.error(Loc{file, atLine, atCol, 1},
                      "a backslash at the end of a line: a string ends on "
                      "its line");
          value += e;
          break;
        }
        if (u < 0x20 || u >= 0x7f) {
          char hex[8];
          std::snprintf(hex, sizeof hex, "x%02x", u);
          shown = std::string("'\\") + hex + "'";
        } else {
          shown = std::string("'\\") + e + "'";
        }
        diags.error(Loc{file, atLine, atCol, 2},
                    "unknown escape " + shown + " in string");
        value += e;
      }
      }
      continue;
    }
    value += c;
  }
  if (peek() != quote) {
    Token t = make(Tok::Error, start, l, cl);
    diags.error(Loc{file, l, cl, 1}, "unterminated string");
    return t;
  }
  advance();
  Token t = make(Tok::String, start, l, cl);
  t.text = std::move(value);
  return t;
}

} // namespace whale::lang
