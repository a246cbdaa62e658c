//===- LexerTest.cpp - tokens and their locations -------------------------===//

#include "lang/Lexer.h"

#include <gtest/gtest.h>

using namespace whale::lang;

namespace {

std::vector<Token> lexAll(const std::string &text, DiagnosticEngine &diags) {
  Lexer lexer(text, 0, diags);
  std::vector<Token> out;
  for (;;) {
    Token t = lexer.next();
    out.push_back(t);
    if (t.kind == Tok::Eof)
      return out;
  }
}

TEST(Lexer, KindsValuesAndLocations) {
  DiagnosticEngine diags;
  auto toks = lexAll(
      "w = param([D, 4], init = normal(0.02)) # c\nx @ w -> 1e-3", diags);
  ASSERT_FALSE(diags.hasErrors());
  EXPECT_EQ(toks[0].kind, Tok::Ident);
  EXPECT_EQ(toks[0].text, "w");
  EXPECT_EQ(toks[0].loc.line, 1u);
  EXPECT_EQ(toks[0].loc.col, 1u);
  EXPECT_EQ(toks[1].kind, Tok::Assign);
  EXPECT_EQ(toks[4].kind, Tok::LBracket);
  EXPECT_EQ(toks[7].kind, Tok::Int);
  EXPECT_EQ(toks[7].intValue, 4);
  // 0.02 is a float with its value; the comment vanishes; one newline.
  auto it = std::find_if(toks.begin(), toks.end(),
                         [](const Token &t) { return t.kind == Tok::Float; });
  ASSERT_NE(it, toks.end());
  EXPECT_DOUBLE_EQ(it->floatValue, 0.02);
  auto nl = std::find_if(toks.begin(), toks.end(),
                         [](const Token &t) { return t.kind == Tok::Newline; });
  ASSERT_NE(nl, toks.end());
  EXPECT_EQ((nl + 1)->text, "x");
  EXPECT_EQ((nl + 1)->loc.line, 2u);
  EXPECT_EQ((nl + 2)->kind, Tok::At);
  EXPECT_EQ((nl + 4)->kind, Tok::Arrow);
  EXPECT_DOUBLE_EQ((nl + 5)->floatValue, 1e-3);
}

TEST(Lexer, NewlinesInsideBracketsAreIgnored) {
  DiagnosticEngine diags;
  auto toks = lexAll("f(a,\n  b)\n\n\ng", diags);
  int newlines = 0;
  for (const Token &t : toks)
    newlines += t.kind == Tok::Newline;
  // One after `)` (the blank lines collapse) and one closing the file.
  EXPECT_EQ(newlines, 2);
}

TEST(Lexer, UnderscoresInNumbersAndKeywords) {
  DiagnosticEngine diags;
  auto toks = lexAll("100_000 replicate split default", diags);
  EXPECT_EQ(toks[0].intValue, 100000);
  EXPECT_EQ(toks[1].kind, Tok::KwReplicate);
  EXPECT_EQ(toks[2].kind, Tok::KwSplit);
  EXPECT_EQ(toks[3].kind, Tok::KwDefault);
}

TEST(Lexer, ErrorsAreDiagnosticsWithPlaces) {
  DiagnosticEngine diags;
  lexAll("a = $\nb = \"open\nc = 99999999999999999999\nd = 12abc", diags);
  ASSERT_EQ(diags.errorCount(), 4u);
  EXPECT_EQ(diags.all()[0].loc.line, 1u);
  EXPECT_EQ(diags.all()[0].loc.col, 5u);
  EXPECT_NE(diags.all()[0].message.find("unexpected character '$'"),
            std::string::npos);
  EXPECT_NE(diags.all()[1].message.find("unterminated string"),
            std::string::npos);
  EXPECT_NE(diags.all()[2].message.find("does not fit in 64 bits"),
            std::string::npos);
  EXPECT_NE(diags.all()[3].message.find("malformed number"), std::string::npos);
}

} // namespace
