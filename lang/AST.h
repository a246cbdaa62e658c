//===- AST.h - syntax tree of a .whl file -------------------------*- C++
//-*-===//
//
// Nodes carry a Kind for LLVM-style isa/dyn_cast and the location of the text
// they came from. The tree is exactly what was written: imports are not
// resolved, loops not unrolled, calls not inlined (Sema does that).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LANG_AST_H
#define WHALE_LANG_AST_H

#include "lang/Source.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace whale::lang {

//===----------------------------------------------------------------------===//
// Types in signatures: f32[B, 1024], int, float
//===----------------------------------------------------------------------===//

/// One dimension in a signature: a name (bound at each call), a literal
/// extent, or `...` (first only): any number of leading dimensions.
struct DimExpr {
  std::string name; // empty for a literal extent; "..." for the ellipsis
  int64_t value = 0;
  Loc loc;
  bool isEllipsis() const { return name == "..."; }
  bool isName() const { return !name.empty() && !isEllipsis(); }
};

struct TypeExpr {
  enum class Kind { Tensor, Int, Float, Bool, Str };
  Kind kind = Kind::Tensor;
  std::string dtype; // "f32", "bf16", "f16", "i32", "i64" for tensors
  std::vector<DimExpr> dims;
  Loc loc;
};

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

class Expr {
public:
  enum class Kind {
    Int,
    Float,
    String,
    Bool,
    Name,
    Attr,
    Call,
    Binary,
    Unary,
    List
  };
  Expr(Kind kind, Loc loc) : kind(kind), loc(loc) {}
  virtual ~Expr() = default;
  Kind getKind() const { return kind; }
  Loc getLoc() const { return loc; }

private:
  Kind kind;
  Loc loc;
};
using ExprPtr = std::unique_ptr<Expr>;

#define WHALE_EXPR_CLASSOF(K)                                                  \
  static bool classof(const Expr *e) { return e->getKind() == Kind::K; }

struct IntExpr : Expr {
  IntExpr(Loc loc, int64_t value) : Expr(Kind::Int, loc), value(value) {}
  int64_t value;
  WHALE_EXPR_CLASSOF(Int)
};

struct FloatExpr : Expr {
  FloatExpr(Loc loc, double value) : Expr(Kind::Float, loc), value(value) {}
  double value;
  WHALE_EXPR_CLASSOF(Float)
};

struct StringExpr : Expr {
  StringExpr(Loc loc, std::string value)
      : Expr(Kind::String, loc), value(std::move(value)) {}
  std::string value;
  WHALE_EXPR_CLASSOF(String)
};

struct BoolExpr : Expr {
  BoolExpr(Loc loc, bool value) : Expr(Kind::Bool, loc), value(value) {}
  bool value;
  WHALE_EXPR_CLASSOF(Bool)
};

struct NameExpr : Expr {
  NameExpr(Loc loc, std::string name)
      : Expr(Kind::Name, loc), name(std::move(name)) {}
  std::string name;
  WHALE_EXPR_CLASSOF(Name)
};

/// `base.name`, as in `nn.linear`.
struct AttrExpr : Expr {
  AttrExpr(Loc loc, ExprPtr base, std::string name, Loc nameLoc)
      : Expr(Kind::Attr, loc), base(std::move(base)), name(std::move(name)),
        nameLoc(nameLoc) {}
  ExprPtr base;
  std::string name;
  Loc nameLoc;
  WHALE_EXPR_CLASSOF(Attr)
};

struct CallArg {
  std::string name; // empty for a positional argument
  Loc nameLoc;
  ExprPtr value;
};

struct CallExpr : Expr {
  CallExpr(Loc loc, ExprPtr callee, std::vector<CallArg> args)
      : Expr(Kind::Call, loc), callee(std::move(callee)),
        args(std::move(args)) {}
  ExprPtr callee;
  std::vector<CallArg> args;
  WHALE_EXPR_CLASSOF(Call)
};

struct BinaryExpr : Expr {
  BinaryExpr(Loc loc, char op, ExprPtr lhs, ExprPtr rhs)
      : Expr(Kind::Binary, loc), op(op), lhs(std::move(lhs)),
        rhs(std::move(rhs)) {}
  char op; // one of + - * / @
  ExprPtr lhs, rhs;
  WHALE_EXPR_CLASSOF(Binary)
};

struct UnaryExpr : Expr {
  UnaryExpr(Loc loc, char op, ExprPtr operand)
      : Expr(Kind::Unary, loc), op(op), operand(std::move(operand)) {}
  char op; // '-'
  ExprPtr operand;
  WHALE_EXPR_CLASSOF(Unary)
};

struct ListExpr : Expr {
  ListExpr(Loc loc, std::vector<ExprPtr> elems)
      : Expr(Kind::List, loc), elems(std::move(elems)) {}
  std::vector<ExprPtr> elems;
  WHALE_EXPR_CLASSOF(List)
};
#undef WHALE_EXPR_CLASSOF

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

class Stmt {
public:
  enum class Kind { Assign, Return, Expr, For, TaskGraph, Default };
  Stmt(Kind kind, Loc loc) : kind(kind), loc(loc) {}
  virtual ~Stmt() = default;
  Kind getKind() const { return kind; }
  Loc getLoc() const { return loc; }

private:
  Kind kind;
  Loc loc;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Block = std::vector<StmtPtr>;

#define WHALE_STMT_CLASSOF(K)                                                  \
  static bool classof(const Stmt *s) { return s->getKind() == Kind::K; }

struct AssignStmt : Stmt {
  AssignStmt(Loc loc, std::string name, ExprPtr value)
      : Stmt(Kind::Assign, loc), name(std::move(name)),
        value(std::move(value)) {}
  std::string name;
  ExprPtr value;
  WHALE_STMT_CLASSOF(Assign)
};

struct ReturnStmt : Stmt {
  ReturnStmt(Loc loc, ExprPtr value)
      : Stmt(Kind::Return, loc), value(std::move(value)) {}
  ExprPtr value;
  WHALE_STMT_CLASSOF(Return)
};

struct ExprStmt : Stmt {
  ExprStmt(Loc loc, ExprPtr value)
      : Stmt(Kind::Expr, loc), value(std::move(value)) {}
  ExprPtr value;
  WHALE_STMT_CLASSOF(Expr)
};

/// `for i in range(a[, b[, step]]) { ... }`, unrolled at compile time.
struct ForStmt : Stmt {
  ForStmt(Loc loc, std::string var, std::vector<ExprPtr> rangeArgs, Block body)
      : Stmt(Kind::For, loc), var(std::move(var)),
        rangeArgs(std::move(rangeArgs)), body(std::move(body)) {}
  std::string var;
  std::vector<ExprPtr> rangeArgs;
  Block body;
  WHALE_STMT_CLASSOF(For)
};

enum class StrategyKind { Replicate, Split };
const char *strategyName(StrategyKind s);

/// `replicate(n) { ... }` or `split(n) { ... }`; `count` is null when the
/// block takes every device.
struct TaskGraphStmt : Stmt {
  TaskGraphStmt(Loc loc, StrategyKind strategy, ExprPtr count, Block body)
      : Stmt(Kind::TaskGraph, loc), strategy(strategy), count(std::move(count)),
        body(std::move(body)) {}
  StrategyKind strategy;
  ExprPtr count;
  Block body;
  WHALE_STMT_CLASSOF(TaskGraph)
};

/// `default replicate(n)`: the strategy of ops outside every block.
struct DefaultStmt : Stmt {
  DefaultStmt(Loc loc, StrategyKind strategy, ExprPtr count)
      : Stmt(Kind::Default, loc), strategy(strategy), count(std::move(count)) {}
  StrategyKind strategy;
  ExprPtr count;
  WHALE_STMT_CLASSOF(Default)
};
#undef WHALE_STMT_CLASSOF

//===----------------------------------------------------------------------===//
// Declarations
//===----------------------------------------------------------------------===//

struct Param {
  std::string name;
  TypeExpr type;
  Loc loc;
};

struct KeyValue {
  std::string key;
  Loc keyLoc;
  ExprPtr value;
};

class Decl {
public:
  enum class Kind { Import, Const, Config, Def, Model, Train };
  Decl(Kind kind, Loc loc) : kind(kind), loc(loc) {}
  virtual ~Decl() = default;
  Kind getKind() const { return kind; }
  Loc getLoc() const { return loc; }

private:
  Kind kind;
  Loc loc;
};
using DeclPtr = std::unique_ptr<Decl>;

#define WHALE_DECL_CLASSOF(K)                                                  \
  static bool classof(const Decl *d) { return d->getKind() == Kind::K; }

struct ImportDecl : Decl {
  ImportDecl(Loc loc, std::string module, std::string alias)
      : Decl(Kind::Import, loc), module(std::move(module)),
        alias(std::move(alias)) {}
  std::string module; // dotted path: "nn" or "models.gpt"
  std::string alias;  // the name it is bound to
  WHALE_DECL_CLASSOF(Import)
};

/// A top-level compile-time constant: `D = 1024`.
struct ConstDecl : Decl {
  ConstDecl(Loc loc, std::string name, ExprPtr value)
      : Decl(Kind::Const, loc), name(std::move(name)), value(std::move(value)) {
  }
  std::string name;
  ExprPtr value;
  WHALE_DECL_CLASSOF(Const)
};

struct ConfigDecl : Decl {
  ConfigDecl(Loc loc, std::vector<KeyValue> entries)
      : Decl(Kind::Config, loc), entries(std::move(entries)) {}
  std::vector<KeyValue> entries;
  WHALE_DECL_CLASSOF(Config)
};

struct DefDecl : Decl {
  DefDecl(Loc loc, std::string name, Loc nameLoc, std::vector<Param> params,
          std::unique_ptr<TypeExpr> result, Block body)
      : Decl(Kind::Def, loc), name(std::move(name)), nameLoc(nameLoc),
        params(std::move(params)), result(std::move(result)),
        body(std::move(body)) {}
  std::string name;
  Loc nameLoc;
  std::vector<Param> params;
  std::unique_ptr<TypeExpr> result; // may be null
  Block body;
  WHALE_DECL_CLASSOF(Def)
};

struct ModelDecl : Decl {
  ModelDecl(Loc loc, std::string name, Loc nameLoc, std::vector<Param> params,
            Block body)
      : Decl(Kind::Model, loc), name(std::move(name)), nameLoc(nameLoc),
        params(std::move(params)), body(std::move(body)) {}
  std::string name;
  Loc nameLoc;
  std::vector<Param> params;
  Block body;
  WHALE_DECL_CLASSOF(Model)
};

struct TrainDecl : Decl {
  TrainDecl(Loc loc, std::string model, Loc modelLoc,
            std::vector<KeyValue> entries)
      : Decl(Kind::Train, loc), model(std::move(model)), modelLoc(modelLoc),
        entries(std::move(entries)) {}
  std::string model;
  Loc modelLoc;
  std::vector<KeyValue> entries;
  WHALE_DECL_CLASSOF(Train)
};
#undef WHALE_DECL_CLASSOF

/// One parsed file.
struct FileAST {
  std::string path;
  uint32_t file = 0;
  std::vector<DeclPtr> decls;
};

/// An indented, stable text form of the tree (`whale compile --emit=ast`).
std::string dumpAST(const FileAST &ast);

} // namespace whale::lang

#endif
