//===- Parser.cpp - recursive-descent parser for .whl ---------------------===//
//
// Grammar: docs/language.md. Every parse function reports its own error and
// returns null; callers propagate null without reporting again. Nesting depth
// is bounded so no input can exhaust the stack.
//
//===----------------------------------------------------------------------===//

#include "lang/Parser.h"

#include "lang/Lexer.h"

#include <algorithm>

namespace whale::lang {

const char *strategyName(StrategyKind s) {
  return s == StrategyKind::Replicate ? "replicate" : "split";
}

namespace {

// Bounds the depth of every tree the parser builds (nested blocks, brackets,
// and chains of binary operators, which nest to the left), so that no later
// recursive walk can run out of stack on hostile input.
constexpr int kMaxDepth = 128;

class Parser {
public:
  Parser(std::string_view text, uint32_t file, DiagnosticEngine &diags)
      : diags(diags) {
    Lexer lexer(text, file, diags);
    for (;;) {
      Token t = lexer.next();
      bool eof = t.kind == Tok::Eof;
      tokens.push_back(std::move(t));
      if (eof)
        break;
    }
  }

  void parseTopLevel(FileAST &ast);

private:
  const Token &tok() const { return tokens[pos]; }
  const Token &peekTok(size_t n = 1) const {
    return tokens[std::min(pos + n, tokens.size() - 1)];
  }
  bool at(Tok k) const { return tok().kind == k; }
  Token take() {
    Token t = tokens[pos];
    if (pos + 1 < tokens.size())
      ++pos;
    return t;
  }
  bool accept(Tok k) {
    if (!at(k))
      return false;
    take();
    return true;
  }
  void skipNewlines() {
    while (at(Tok::Newline) || at(Tok::Semicolon))
      take();
  }
  std::string found() const {
    const Token &t = tok();
    if (t.kind == Tok::Ident)
      return "identifier '" + t.text + "'";
    if (t.kind == Tok::Int || t.kind == Tok::Float)
      return "number '" + t.text + "'";
    if (t.kind == Tok::String)
      return "string";
    return describe(t.kind);
  }
  /// Reports "expected X, found Y" at the current token.
  std::nullptr_t fail(const std::string &expected) {
    // The lexer reported a bad token already; one error per place.
    if (tok().kind != Tok::Error)
      diags.error(tok().loc, "expected " + expected + ", found " + found());
    return nullptr;
  }
  bool expect(Tok k, const char *context = nullptr) {
    if (accept(k))
      return true;
    std::string what = describe(k);
    if (context)
      what += std::string(" ") + context;
    fail(what);
    return false;
  }

  /// Skips to the end of the current statement: past a newline or up to the
  /// `}` that closes the enclosing block, keeping nested braces balanced.
  void syncStatement();
  /// Skips to the next token that can start a declaration at the top level.
  void syncDecl();

  // Declarations
  DeclPtr parseDecl();
  DeclPtr parseImport();
  DeclPtr parseConfig();
  DeclPtr parseDef();
  DeclPtr parseModel();
  DeclPtr parseTrain();
  bool parseEntries(std::vector<KeyValue> &entries);
  bool parseParams(std::vector<Param> &params);
  std::unique_ptr<TypeExpr> parseType();

  // Statements
  bool parseBlock(Block &body);
  StmtPtr parseStmt();
  StmtPtr parseFor();
  StmtPtr parseTaskGraph();
  StmtPtr parseDefault();
  bool parseStrategyCount(ExprPtr &count);

  // Expressions
  ExprPtr parseExpr();
  ExprPtr parseBinary(size_t level);
  ExprPtr parseUnary();
  ExprPtr parsePostfix();
  ExprPtr parsePrimary();
  bool parseCallArgs(std::vector<CallArg> &args);

  struct DepthGuard {
    Parser &p;
    bool ok;
    explicit DepthGuard(Parser &p) : p(p), ok(++p.depth <= kMaxDepth) {
      if (!ok && !p.depthReported) {
        p.diags.error(p.tok().loc, "nesting is too deep (more than " +
                                       std::to_string(kMaxDepth) + " levels)");
        p.depthReported = true;
      }
    }
    ~DepthGuard() { --p.depth; }
  };

  /// Each operator of a chain (`a + b + c`, `f(x)(y).z`) adds a level to
  /// the tree, so it counts against the same depth as brackets do.
  struct ChainGuard {
    Parser &p;
    int added = 0;
    explicit ChainGuard(Parser &p) : p(p) {}
    bool step() {
      DepthGuard probe(p);
      if (!probe.ok)
        return false;
      ++p.depth; // keep the level until the chain ends
      ++added;
      return true;
    }
    ~ChainGuard() { p.depth -= added; }
  };

  DiagnosticEngine &diags;
  std::vector<Token> tokens;
  size_t pos = 0;
  int depth = 0;
  bool depthReported = false;
};

void Parser::syncStatement() {
  int braces = 0;
  while (!at(Tok::Eof)) {
    if (at(Tok::LBrace))
      ++braces;
    if (at(Tok::RBrace)) {
      if (braces == 0)
        return;
      --braces;
    }
    if (braces == 0 && (at(Tok::Newline) || at(Tok::Semicolon))) {
      take();
      return;
    }
    take();
  }
}

void Parser::syncDecl() {
  int braces = 0;
  while (!at(Tok::Eof)) {
    if (at(Tok::LBrace))
      ++braces;
    else if (at(Tok::RBrace) && braces > 0)
      --braces;
    take();
    if (braces == 0 && tokens[pos - 1].kind != Tok::LBrace &&
        (at(Tok::KwImport) || at(Tok::KwConfig) || at(Tok::KwDef) ||
         at(Tok::KwModel) || at(Tok::KwTrain)))
      return;
  }
}

void Parser::parseTopLevel(FileAST &ast) {
  skipNewlines();
  while (!at(Tok::Eof) && !diags.tooMany()) {
    size_t before = pos;
    DeclPtr d = parseDecl();
    if (d) {
      ast.decls.push_back(std::move(d));
      if (!at(Tok::Eof) && !accept(Tok::Newline) && !accept(Tok::Semicolon)) {
        fail("end of line after the declaration");
        syncDecl();
      }
    } else {
      syncDecl();
    }
    if (pos == before)
      take(); // guarantee progress on any input
    skipNewlines();
  }
}

DeclPtr Parser::parseDecl() {
  switch (tok().kind) {
  case Tok::KwImport:
    return parseImport();
  case Tok::KwConfig:
    return parseConfig();
  case Tok::KwDef:
    return parseDef();
  case Tok::KwModel:
    return parseModel();
  case Tok::KwTrain:
    return parseTrain();
  case Tok::Ident:
    if (peekTok().kind == Tok::Assign) {
      Token name = take();
      take();
      ExprPtr value = parseExpr();
      if (!value)
        return nullptr;
      return std::make_unique<ConstDecl>(name.loc, name.text, std::move(value));
    }
    [[fallthrough]];
  default:
    return fail("a declaration (import, config, def, model, train, or "
                "NAME = value)");
  }
}

DeclPtr Parser::parseImport() {
  Loc loc = take().loc;
  if (!at(Tok::Ident))
    return fail("a module name after 'import'");
  std::string module = take().text;
  std::string alias = module;
  while (accept(Tok::Dot)) {
    if (!at(Tok::Ident))
      return fail("a module name after '.'");
    alias = tok().text;
    module += "." + take().text;
  }
  if (accept(Tok::KwAs)) {
    if (!at(Tok::Ident))
      return fail("a name after 'as'");
    alias = take().text;
  }
  return std::make_unique<ImportDecl>(loc, module, alias);
}

bool Parser::parseEntries(std::vector<KeyValue> &entries) {
  if (!expect(Tok::LBrace))
    return false;
  skipNewlines();
  while (!at(Tok::RBrace) && !at(Tok::Eof)) {
    if (!at(Tok::Ident)) {
      fail("a key (NAME = value)");
      syncStatement();
      skipNewlines();
      continue;
    }
    Token key = take();
    if (!expect(Tok::Assign, "after the key")) {
      syncStatement();
      skipNewlines();
      continue;
    }
    ExprPtr value = parseExpr();
    if (!value) {
      syncStatement();
      skipNewlines();
      continue;
    }
    entries.push_back({key.text, key.loc, std::move(value)});
    if (!at(Tok::RBrace) && !accept(Tok::Newline) && !accept(Tok::Semicolon)) {
      fail("end of line after the value");
      syncStatement();
    }
    skipNewlines();
  }
  return expect(Tok::RBrace);
}

DeclPtr Parser::parseConfig() {
  Loc loc = take().loc;
  std::vector<KeyValue> entries;
  if (!parseEntries(entries))
    return nullptr;
  return std::make_unique<ConfigDecl>(loc, std::move(entries));
}

DeclPtr Parser::parseTrain() {
  Loc loc = take().loc;
  if (!at(Tok::Ident))
    return fail("the name of the model to train");
  Token model = take();
  std::vector<KeyValue> entries;
  if (!parseEntries(entries))
    return nullptr;
  return std::make_unique<TrainDecl>(loc, model.text, model.loc,
                                     std::move(entries));
}

std::unique_ptr<TypeExpr> Parser::parseType() {
  if (!at(Tok::Ident)) {
    fail("a type (f32[...], int, float, bool, str)");
    return nullptr;
  }
  Token name = take();
  auto type = std::make_unique<TypeExpr>();
  type->loc = name.loc;
  if (name.text == "int") {
    type->kind = TypeExpr::Kind::Int;
    return type;
  }
  if (name.text == "float") {
    type->kind = TypeExpr::Kind::Float;
    return type;
  }
  if (name.text == "bool") {
    type->kind = TypeExpr::Kind::Bool;
    return type;
  }
  if (name.text == "str") {
    type->kind = TypeExpr::Kind::Str;
    return type;
  }
  if (name.text != "f32" && name.text != "f16" && name.text != "bf16" &&
      name.text != "i32" && name.text != "i64") {
    diags.error(name.loc, "unknown type '" + name.text +
                              "'; expected f32, bf16, f16, i32, i64, int, "
                              "float, bool or str");
    return nullptr;
  }
  type->dtype = name.text;
  if (!accept(Tok::LBracket))
    return type; // a rank-0 tensor
  while (!at(Tok::RBracket)) {
    DimExpr dim;
    dim.loc = tok().loc;
    if (at(Tok::Dot) && peekTok().kind == Tok::Dot &&
        peekTok(2).kind == Tok::Dot) {
      take();
      take();
      take();
      if (!type->dims.empty()) {
        diags.error(dim.loc, "'...' stands for the leading dimensions and must "
                             "come first");
        return nullptr;
      }
      dim.name = "...";
      dim.loc.len = 3;
    } else if (at(Tok::Ident)) {
      dim.name = take().text;
    } else if (at(Tok::Int)) {
      dim.value = take().intValue;
      if (dim.value < 1) {
        diags.error(dim.loc, "a dimension must be at least 1");
        return nullptr;
      }
    } else {
      fail("a dimension (a name or a positive integer)");
      return nullptr;
    }
    type->dims.push_back(std::move(dim));
    if (!accept(Tok::Comma))
      break;
  }
  if (!expect(Tok::RBracket, "to close the shape"))
    return nullptr;
  type->loc.len = tokens[pos - 1].loc.col + 1 > type->loc.col &&
                          tokens[pos - 1].loc.line == type->loc.line
                      ? tokens[pos - 1].loc.col + 1 - type->loc.col
                      : type->loc.len;
  return type;
}

bool Parser::parseParams(std::vector<Param> &params) {
  if (!expect(Tok::LParen))
    return false;
  while (!at(Tok::RParen)) {
    if (!at(Tok::Ident)) {
      fail("a parameter name");
      return false;
    }
    Token name = take();
    if (!expect(Tok::Colon, "and a type after the parameter name"))
      return false;
    std::unique_ptr<TypeExpr> type = parseType();
    if (!type)
      return false;
    params.push_back({name.text, std::move(*type), name.loc});
    if (!accept(Tok::Comma))
      break;
  }
  return expect(Tok::RParen);
}

DeclPtr Parser::parseDef() {
  Loc loc = take().loc;
  if (!at(Tok::Ident))
    return fail("a function name after 'def'");
  Token name = take();
  std::vector<Param> params;
  if (!parseParams(params))
    return nullptr;
  std::unique_ptr<TypeExpr> result;
  if (accept(Tok::Arrow)) {
    result = parseType();
    if (!result)
      return nullptr;
  }
  Block body;
  if (!parseBlock(body))
    return nullptr;
  return std::make_unique<DefDecl>(loc, name.text, name.loc, std::move(params),
                                   std::move(result), std::move(body));
}

DeclPtr Parser::parseModel() {
  Loc loc = take().loc;
  if (!at(Tok::Ident))
    return fail("a model name after 'model'");
  Token name = take();
  std::vector<Param> params;
  if (!parseParams(params))
    return nullptr;
  Block body;
  if (!parseBlock(body))
    return nullptr;
  return std::make_unique<ModelDecl>(loc, name.text, name.loc,
                                     std::move(params), std::move(body));
}

bool Parser::parseBlock(Block &body) {
  DepthGuard guard(*this);
  if (!guard.ok)
    return false;
  if (!expect(Tok::LBrace, "to open a block"))
    return false;
  skipNewlines();
  while (!at(Tok::RBrace) && !at(Tok::Eof) && !diags.tooMany()) {
    size_t before = pos;
    StmtPtr s = parseStmt();
    if (!s) {
      syncStatement();
    } else {
      body.push_back(std::move(s));
      if (!at(Tok::RBrace) && !accept(Tok::Newline) &&
          !accept(Tok::Semicolon)) {
        fail("end of statement");
        syncStatement();
      }
    }
    if (pos == before)
      take();
    skipNewlines();
  }
  return expect(Tok::RBrace, "to close the block");
}

StmtPtr Parser::parseStmt() {
  Loc loc = tok().loc;
  switch (tok().kind) {
  case Tok::KwReturn: {
    take();
    ExprPtr value = parseExpr();
    if (!value)
      return nullptr;
    return std::make_unique<ReturnStmt>(loc, std::move(value));
  }
  case Tok::KwFor:
    return parseFor();
  case Tok::KwReplicate:
  case Tok::KwSplit:
    return parseTaskGraph();
  case Tok::KwDefault:
    return parseDefault();
  case Tok::KwDef:
  case Tok::KwModel:
  case Tok::KwTrain:
  case Tok::KwConfig:
  case Tok::KwImport:
    diags.error(loc, std::string(describe(tok().kind)) +
                         " is only allowed at the top level of a file");
    return nullptr;
  case Tok::Ident:
    if (peekTok().kind == Tok::Assign) {
      Token name = take();
      take();
      ExprPtr value = parseExpr();
      if (!value)
        return nullptr;
      return std::make_unique<AssignStmt>(name.loc, name.text,
                                          std::move(value));
    }
    break;
  default:
    break;
  }
  ExprPtr value = parseExpr();
  if (!value)
    return nullptr;
  return std::make_unique<ExprStmt>(loc, std::move(value));
}

StmtPtr Parser::parseFor() {
  Loc loc = take().loc;
  if (!at(Tok::Ident))
    return fail("a loop variable after 'for'");
  Token var = take();
  if (!expect(Tok::KwIn, "after the loop variable"))
    return nullptr;
  if (!at(Tok::Ident) || tok().text != "range")
    return fail("'range(...)': loops run over a range of integers");
  take();
  std::vector<CallArg> args;
  if (!parseCallArgs(args))
    return nullptr;
  std::vector<ExprPtr> rangeArgs;
  for (CallArg &a : args) {
    if (!a.name.empty()) {
      diags.error(a.nameLoc, "range() takes positional arguments only");
      return nullptr;
    }
    rangeArgs.push_back(std::move(a.value));
  }
  if (rangeArgs.empty() || rangeArgs.size() > 3) {
    diags.error(loc, "range() takes 1 to 3 arguments (end; start, end; or "
                     "start, end, step), got " +
                         std::to_string(rangeArgs.size()));
    return nullptr;
  }
  Block body;
  if (!parseBlock(body))
    return nullptr;
  return std::make_unique<ForStmt>(loc, var.text, std::move(rangeArgs),
                                   std::move(body));
}

bool Parser::parseStrategyCount(ExprPtr &count) {
  if (!accept(Tok::LParen))
    return true;
  if (at(Tok::RParen)) {
    take();
    return true;
  }
  count = parseExpr();
  if (!count)
    return false;
  return expect(Tok::RParen, "after the device count");
}

StmtPtr Parser::parseTaskGraph() {
  Token kw = take();
  StrategyKind s = kw.kind == Tok::KwReplicate ? StrategyKind::Replicate
                                               : StrategyKind::Split;
  ExprPtr count;
  if (!parseStrategyCount(count))
    return nullptr;
  Block body;
  if (!parseBlock(body))
    return nullptr;
  return std::make_unique<TaskGraphStmt>(kw.loc, s, std::move(count),
                                         std::move(body));
}

StmtPtr Parser::parseDefault() {
  Loc loc = take().loc;
  StrategyKind s;
  if (at(Tok::KwReplicate))
    s = StrategyKind::Replicate;
  else if (at(Tok::KwSplit))
    s = StrategyKind::Split;
  else
    return fail("'replicate' or 'split' after 'default'");
  take();
  ExprPtr count;
  if (!parseStrategyCount(count))
    return nullptr;
  if (at(Tok::LBrace)) {
    diags.error(tok().loc, "'default' sets the strategy of the ops outside "
                           "every block and takes no block; use '" +
                               std::string(strategyName(s)) + " { ... }'");
    return nullptr;
  }
  return std::make_unique<DefaultStmt>(loc, s, std::move(count));
}

bool Parser::parseCallArgs(std::vector<CallArg> &args) {
  if (!expect(Tok::LParen))
    return false;
  bool sawNamed = false;
  while (!at(Tok::RParen)) {
    CallArg arg;
    if (at(Tok::Ident) && peekTok().kind == Tok::Assign) {
      Token name = take();
      take();
      arg.name = name.text;
      arg.nameLoc = name.loc;
      sawNamed = true;
    } else if (sawNamed) {
      diags.error(tok().loc, "positional argument after a named argument");
      return false;
    }
    arg.value = parseExpr();
    if (!arg.value)
      return false;
    if (arg.name.empty())
      arg.nameLoc = arg.value->getLoc();
    args.push_back(std::move(arg));
    if (!accept(Tok::Comma))
      break;
  }
  return expect(Tok::RParen, "to close the argument list");
}

ExprPtr Parser::parseExpr() {
  DepthGuard guard(*this);
  if (!guard.ok)
    return nullptr;
  return parseBinary(0);
}

/// Binary operators by precedence, loosest first; every level associates to
/// the left, and `@` binds like `*` (as in Python).
static const std::vector<std::vector<Tok>> kBinaryLevels = {
    {Tok::Plus, Tok::Minus},
    {Tok::Star, Tok::Slash, Tok::At},
};

ExprPtr Parser::parseBinary(size_t level) {
  if (level == kBinaryLevels.size())
    return parseUnary();
  const std::vector<Tok> &ops = kBinaryLevels[level];
  auto atOp = [&] {
    return std::find(ops.begin(), ops.end(), tok().kind) != ops.end();
  };
  ExprPtr lhs = parseBinary(level + 1);
  ChainGuard chain(*this);
  while (lhs && atOp()) {
    if (!chain.step())
      return nullptr;
    Token op = take();
    ExprPtr rhs = parseBinary(level + 1);
    if (!rhs)
      return nullptr;
    lhs = std::make_unique<BinaryExpr>(op.loc, op.text[0], std::move(lhs),
                                       std::move(rhs));
  }
  return lhs;
}

ExprPtr Parser::parseUnary() {
  if (at(Tok::Minus)) {
    DepthGuard guard(*this);
    if (!guard.ok)
      return nullptr;
    Token op = take();
    ExprPtr operand = parseUnary();
    if (!operand)
      return nullptr;
    return std::make_unique<UnaryExpr>(op.loc, '-', std::move(operand));
  }
  return parsePostfix();
}

ExprPtr Parser::parsePostfix() {
  ExprPtr e = parsePrimary();
  ChainGuard chain(*this);
  while (e && (at(Tok::LParen) || at(Tok::Dot))) {
    if (!chain.step())
      return nullptr;
    if (at(Tok::LParen)) {
      Loc loc = e->getLoc();
      std::vector<CallArg> args;
      if (!parseCallArgs(args))
        return nullptr;
      e = std::make_unique<CallExpr>(loc, std::move(e), std::move(args));
    } else if (at(Tok::Dot)) {
      take();
      if (!at(Tok::Ident))
        return fail("a name after '.'");
      Token name = take();
      Loc loc = e->getLoc();
      e = std::make_unique<AttrExpr>(loc, std::move(e), name.text, name.loc);
    } else {
      break;
    }
  }
  return e;
}

ExprPtr Parser::parsePrimary() {
  Token t = tok();
  switch (t.kind) {
  case Tok::Int:
    take();
    return std::make_unique<IntExpr>(t.loc, t.intValue);
  case Tok::Float:
    take();
    return std::make_unique<FloatExpr>(t.loc, t.floatValue);
  case Tok::String:
    take();
    return std::make_unique<StringExpr>(t.loc, t.text);
  case Tok::KwTrue:
  case Tok::KwFalse:
    take();
    return std::make_unique<BoolExpr>(t.loc, t.kind == Tok::KwTrue);
  case Tok::Ident:
    take();
    return std::make_unique<NameExpr>(t.loc, t.text);
  case Tok::LParen: {
    take();
    ExprPtr inner = parseExpr();
    if (!inner)
      return nullptr;
    if (!expect(Tok::RParen))
      return nullptr;
    return inner;
  }
  case Tok::LBracket: {
    take();
    std::vector<ExprPtr> elems;
    while (!at(Tok::RBracket)) {
      ExprPtr e = parseExpr();
      if (!e)
        return nullptr;
      elems.push_back(std::move(e));
      if (!accept(Tok::Comma))
        break;
    }
    if (!expect(Tok::RBracket, "to close the list"))
      return nullptr;
    return std::make_unique<ListExpr>(t.loc, std::move(elems));
  }
  default:
    return fail("an expression");
  }
}

} // namespace

std::unique_ptr<FileAST> parseFile(std::string_view text, uint32_t file,
                                   std::string path, DiagnosticEngine &diags) {
  auto ast = std::make_unique<FileAST>();
  ast->path = std::move(path);
  ast->file = file;
  Parser parser(text, file, diags);
  parser.parseTopLevel(*ast);
  return ast;
}

} // namespace whale::lang
