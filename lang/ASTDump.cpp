//===- ASTDump.cpp - text form of the syntax tree -------------------------===//

#include "lang/AST.h"

#include "llvm/Support/Casting.h"

#include <sstream>

using llvm::dyn_cast;

namespace whale::lang {
namespace {

class Dumper {
public:
  std::string run(const FileAST &ast) {
    line(0, "file '" + ast.path + "'");
    for (const DeclPtr &d : ast.decls)
      decl(1, *d);
    return out.str();
  }

private:
  void line(int indent, const std::string &text) {
    out << std::string(2 * indent, ' ') << text << "\n";
  }
  static std::string at(Loc loc) {
    return " @" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
  }
  static std::string type(const TypeExpr &t) {
    switch (t.kind) {
    case TypeExpr::Kind::Int:
      return "int";
    case TypeExpr::Kind::Float:
      return "float";
    case TypeExpr::Kind::Bool:
      return "bool";
    case TypeExpr::Kind::Str:
      return "str";
    case TypeExpr::Kind::Tensor:
      break;
    }
    std::string s = t.dtype + "[";
    for (size_t i = 0; i < t.dims.size(); ++i) {
      if (i)
        s += ", ";
      s += !t.dims[i].name.empty() ? t.dims[i].name
                                   : std::to_string(t.dims[i].value);
    }
    return s + "]";
  }
  void params(int indent, const std::vector<Param> &ps) {
    for (const Param &p : ps)
      line(indent, "param " + p.name + ": " + type(p.type) + at(p.loc));
  }
  void entries(int indent, const std::vector<KeyValue> &kvs) {
    for (const KeyValue &kv : kvs) {
      line(indent, "entry " + kv.key + at(kv.keyLoc));
      expr(indent + 1, *kv.value);
    }
  }

  void decl(int indent, const Decl &d) {
    if (auto *i = dyn_cast<ImportDecl>(&d)) {
      line(indent, "import " + i->module + " as " + i->alias + at(d.getLoc()));
    } else if (auto *c = dyn_cast<ConstDecl>(&d)) {
      line(indent, "const " + c->name + at(d.getLoc()));
      expr(indent + 1, *c->value);
    } else if (auto *c = dyn_cast<ConfigDecl>(&d)) {
      line(indent, "config" + at(d.getLoc()));
      entries(indent + 1, c->entries);
    } else if (auto *f = dyn_cast<DefDecl>(&d)) {
      line(indent, "def " + f->name +
                       (f->result ? " -> " + type(*f->result) : "") +
                       at(d.getLoc()));
      params(indent + 1, f->params);
      block(indent + 1, f->body);
    } else if (auto *m = dyn_cast<ModelDecl>(&d)) {
      line(indent, "model " + m->name + at(d.getLoc()));
      params(indent + 1, m->params);
      block(indent + 1, m->body);
    } else if (auto *t = dyn_cast<TrainDecl>(&d)) {
      line(indent, "train " + t->model + at(d.getLoc()));
      entries(indent + 1, t->entries);
    }
  }

  void block(int indent, const Block &b) {
    for (const StmtPtr &s : b)
      stmt(indent, *s);
  }

  void stmt(int indent, const Stmt &s) {
    if (auto *a = dyn_cast<AssignStmt>(&s)) {
      line(indent, "assign " + a->name + at(s.getLoc()));
      expr(indent + 1, *a->value);
    } else if (auto *r = dyn_cast<ReturnStmt>(&s)) {
      line(indent, "return" + at(s.getLoc()));
      expr(indent + 1, *r->value);
    } else if (auto *e = dyn_cast<ExprStmt>(&s)) {
      line(indent, "expr" + at(s.getLoc()));
      expr(indent + 1, *e->value);
    } else if (auto *f = dyn_cast<ForStmt>(&s)) {
      line(indent, "for " + f->var + " in range" + at(s.getLoc()));
      for (const ExprPtr &a : f->rangeArgs)
        expr(indent + 2, *a);
      line(indent + 1, "body");
      block(indent + 2, f->body);
    } else if (auto *t = dyn_cast<TaskGraphStmt>(&s)) {
      line(indent, std::string(strategyName(t->strategy)) +
                       (t->count ? "" : " (all devices)") + at(s.getLoc()));
      if (t->count)
        expr(indent + 2, *t->count);
      line(indent + 1, "body");
      block(indent + 2, t->body);
    } else if (auto *d = dyn_cast<DefaultStmt>(&s)) {
      line(indent, std::string("default ") + strategyName(d->strategy) +
                       (d->count ? "" : " (all devices)") + at(s.getLoc()));
      if (d->count)
        expr(indent + 1, *d->count);
    }
  }

  void expr(int indent, const Expr &e) {
    if (auto *i = dyn_cast<IntExpr>(&e)) {
      line(indent, "int " + std::to_string(i->value));
    } else if (auto *f = dyn_cast<FloatExpr>(&e)) {
      std::ostringstream s;
      s << f->value;
      line(indent, "float " + s.str());
    } else if (auto *s = dyn_cast<StringExpr>(&e)) {
      line(indent, "string \"" + s->value + "\"");
    } else if (auto *b = dyn_cast<BoolExpr>(&e)) {
      line(indent, std::string("bool ") + (b->value ? "true" : "false"));
    } else if (auto *n = dyn_cast<NameExpr>(&e)) {
      line(indent, "name " + n->name + at(e.getLoc()));
    } else if (auto *a = dyn_cast<AttrExpr>(&e)) {
      line(indent, "attr ." + a->name + at(a->nameLoc));
      expr(indent + 1, *a->base);
    } else if (auto *c = dyn_cast<CallExpr>(&e)) {
      line(indent, "call" + at(e.getLoc()));
      expr(indent + 1, *c->callee);
      for (const CallArg &arg : c->args) {
        if (!arg.name.empty()) {
          line(indent + 1, "named " + arg.name);
          expr(indent + 2, *arg.value);
        } else {
          expr(indent + 1, *arg.value);
        }
      }
    } else if (auto *b = dyn_cast<BinaryExpr>(&e)) {
      line(indent, std::string("binary ") + b->op + at(e.getLoc()));
      expr(indent + 1, *b->lhs);
      expr(indent + 1, *b->rhs);
    } else if (auto *u = dyn_cast<UnaryExpr>(&e)) {
      line(indent, std::string("unary ") + u->op + at(e.getLoc()));
      expr(indent + 1, *u->operand);
    } else if (auto *l = dyn_cast<ListExpr>(&e)) {
      line(indent, "list" + at(e.getLoc()));
      for (const ExprPtr &x : l->elems)
        expr(indent + 1, *x);
    }
  }

  std::ostringstream out;
};

} // namespace

std::string dumpAST(const FileAST &ast) { return Dumper().run(ast); }

} // namespace whale::lang
