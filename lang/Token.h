//===- Token.h - tokens of the .whl language ---------------------*- C++
//-*-===//

#ifndef WHALE_LANG_TOKEN_H
#define WHALE_LANG_TOKEN_H

#include "lang/Source.h"

#include <cstdint>
#include <string>

namespace whale::lang {

enum class Tok {
  Eof,
  Newline,
  Error,
  Ident,
  Int,
  Float,
  String,
  // keywords
  KwImport,
  KwAs,
  KwConfig,
  KwDef,
  KwModel,
  KwTrain,
  KwReturn,
  KwFor,
  KwIn,
  KwReplicate,
  KwSplit,
  KwDefault,
  KwTrue,
  KwFalse,
  // punctuation
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  Comma,
  Colon,
  Semicolon,
  Dot,
  Assign,
  Arrow,
  At,
  Plus,
  Minus,
  Star,
  Slash,
};

/// How a token kind reads in a diagnostic ("'{'", "identifier").
const char *describe(Tok kind);

struct Token {
  Tok kind = Tok::Eof;
  Loc loc;
  std::string text; // identifier name, string value, or the spelling
  int64_t intValue = 0;
  double floatValue = 0;
};

} // namespace whale::lang

#endif
