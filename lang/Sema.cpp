//===- Sema.cpp - modules, names, recursion, config and train blocks ------===//

#include "lang/Sema.h"

#include "lang/SemaImpl.h"
#include "lang/Suggest.h"
#include "support/Limits.h"

#include "llvm/Support/Casting.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

using llvm::dyn_cast;
using llvm::isa;

namespace whale::lang {

std::string describe(const SVal &v) {
  switch (v.kind) {
  case SVal::Kind::Error:
    return "an invalid value";
  case SVal::Kind::None:
    return "nothing";
  case SVal::Kind::Int:
    return "an integer";
  case SVal::Kind::Float:
    return "a number";
  case SVal::Kind::Bool:
    return "a bool";
  case SVal::Kind::Str:
    return "a string";
  case SVal::Kind::List:
    return "a list";
  case SVal::Kind::Tensor:
    return "a tensor";
  case SVal::Kind::Module:
    return "a module";
  case SVal::Kind::Def:
    return "a function";
  case SVal::Kind::Builtin:
    return "a built-in function";
  case SVal::Kind::Setting:
    return std::string(std::string("aeiou").find(v.category[0]) ==
                               std::string::npos
                           ? "a "
                           : "an ") +
           v.category + " setting";
  }
  return "a value";
}

void Sema::error(Loc loc, const std::string &msg) {
  std::string where = std::to_string(loc.file) + ":" +
                      std::to_string(loc.line) + ":" + std::to_string(loc.col);
  if (!reported.insert({where, msg}).second)
    return;
  diags.error(loc, msg);
  // Show how elaboration got here: the call sites, innermost first.
  size_t shown = 0;
  for (auto it = callSites.rbegin(); it != callSites.rend() && shown < 4;
       ++it, ++shown)
    diags.note(*it, "in the call from here");
}

//===----------------------------------------------------------------------===//
// Modules
//===----------------------------------------------------------------------===//

static std::string dirOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::optional<std::pair<std::string, std::string>>
Sema::findModule(const std::string &dotted, const FileAST &from, Loc loc) {
  std::string rel = dotted;
  for (char &c : rel)
    if (c == '.')
      c = '/';
  rel += ".whl";
  std::vector<std::string> dirs = {dirOf(from.path)};
  for (const std::string &d : fe.getOptions().searchPath)
    dirs.push_back(d);
  for (const std::string &d : dirs) {
    std::string candidate = d + "/" + rel;
    if (std::optional<std::string> text = readFile(candidate))
      return std::make_pair(candidate, std::move(*text));
  }
  std::string msg =
      "cannot find module '" + dotted + "'; looked for '" + rel + "' in:";
  for (const std::string &d : dirs)
    msg += " " + d;
  error(loc, msg);
  return std::nullopt;
}

const ModuleInfo *Sema::loadModule(const FileAST &ast, const std::string &name,
                                   bool isMain) {
  auto info = std::make_unique<ModuleInfo>();
  info->name = name;
  info->ast = &ast;
  info->isMain = isMain;
  ModuleInfo *m = info.get();
  modules.push_back(std::move(info));
  modulesByPath[ast.path] = m;
  loading.push_back(ast.path);

  auto duplicate = [&](const std::string &n, Loc loc, Loc prev) {
    error(loc, "'" + n + "' is already defined in this file");
    note(prev, "the earlier definition is here");
  };
  auto definedAt = [&](const std::string &n) -> const Decl * {
    if (auto it = m->defs.find(n); it != m->defs.end())
      return it->second;
    if (auto it = m->models.find(n); it != m->models.end())
      return it->second;
    if (auto it = m->consts.find(n); it != m->consts.end())
      return it->second;
    return nullptr;
  };

  for (const DeclPtr &d : ast.decls) {
    if (auto *imp = dyn_cast<ImportDecl>(d.get())) {
      if (m->imports.count(imp->alias) || definedAt(imp->alias)) {
        error(imp->getLoc(),
              "'" + imp->alias + "' is already defined in this file");
        continue;
      }
      auto found = findModule(imp->module, ast, imp->getLoc());
      if (!found)
        continue;
      const std::string &path = found->first;
      if (std::find(loading.begin(), loading.end(), path) != loading.end()) {
        error(imp->getLoc(),
              "import cycle: '" + imp->module + "' is being imported already");
        continue;
      }
      if (auto it = modulesByPath.find(path); it != modulesByPath.end()) {
        m->imports[imp->alias] = it->second;
        continue;
      }
      size_t before = diags.errorCount();
      const FileAST *sub = fe.loadModule(path, std::move(found->second));
      if (diags.errorCount() != before) {
        note(imp->getLoc(), "in the module imported here");
        continue;
      }
      m->imports[imp->alias] = loadModule(*sub, imp->module, false);
    } else if (auto *def = dyn_cast<DefDecl>(d.get())) {
      if (isBuiltin(def->name) || isSettingCtor(def->name))
        error(def->nameLoc, "'" + def->name +
                                "' is a built-in function; "
                                "choose another name for this def");
      else if (const Decl *prev = definedAt(def->name))
        duplicate(def->name, def->nameLoc, prev->getLoc());
      else
        m->defs[def->name] = def;
    } else if (auto *model = dyn_cast<ModelDecl>(d.get())) {
      if (!isMain) {
        error(model->getLoc(), "models belong in the main script, not in "
                               "an imported module");
        continue;
      }
      if (const Decl *prev = definedAt(model->name))
        duplicate(model->name, model->nameLoc, prev->getLoc());
      else
        m->models[model->name] = model;
    } else if (auto *c = dyn_cast<ConstDecl>(d.get())) {
      if (const Decl *prev = definedAt(c->name))
        duplicate(c->name, c->getLoc(), prev->getLoc());
      else
        m->consts[c->name] = c;
    } else if (!isMain &&
               (isa<ConfigDecl>(d.get()) || isa<TrainDecl>(d.get()))) {
      error(d->getLoc(),
            std::string(isa<ConfigDecl>(d.get()) ? "config" : "train") +
                " blocks belong in the main script, not in an "
                "imported module");
    }
  }
  loading.pop_back();
  evaluateConsts(*m);
  return m;
}

void Sema::evaluateConsts(ModuleInfo &m) {
  frames.push_back(Frame{});
  frames.back().module = &m;
  for (const DeclPtr &d : m.ast->decls) {
    auto *c = dyn_cast<ConstDecl>(d.get());
    if (!c || m.consts[c->name] != c)
      continue;
    SVal v = eval(*c->value);
    if (v.kind == SVal::Kind::Tensor) {
      error(c->value->getLoc(), "top-level constants are compile-time values; "
                                "tensors are made inside a def or model");
      v = SVal::error();
    }
    const auto &defines = fe.getOptions().defines;
    if (auto d = defines.find(c->name); m.isMain && d != defines.end())
      v = defined(*c, v, d->second);
    m.constValues[c->name] = v;
  }
  frames.pop_back();
  if (m.isMain)
    for (const auto &[name, value] : fe.getOptions().defines)
      if (!m.consts.count(name))
        error(Loc{}, "--define " + name + "=" + value +
                         ": the script has no top-level constant '" + name +
                         "'");
}

SVal Sema::defined(const ConstDecl &c, const SVal &scripted,
                   const std::string &text) {
  // The value as written, read as the kind the script gives the constant.
  SVal v = SVal::error();
  const char *begin = text.c_str();
  char *end = nullptr;
  if (scripted.kind == SVal::Kind::Int) {
    errno = 0;
    long long i = std::strtoll(begin, &end, 10);
    if (!text.empty() && *end == '\0' && errno == 0)
      v = SVal::ofInt(Dim::known(i));
  } else if (scripted.kind == SVal::Kind::Float) {
    double f = std::strtod(begin, &end);
    if (!text.empty() && *end == '\0' && std::isfinite(f))
      v = SVal::ofFloat(f);
  } else if (scripted.kind == SVal::Kind::Bool) {
    if (text == "true" || text == "false")
      v = SVal::ofBool(text == "true");
  } else if (scripted.kind == SVal::Kind::Str) {
    v = SVal::ofStr(text);
  }
  if (v.kind == SVal::Kind::Error && scripted.kind != SVal::Kind::Error)
    error(c.getLoc(), "--define " + c.name + "=" + text + ": '" + c.name +
                          "' is " + describe(scripted) + " here, and '" +
                          text + "' is not");
  return v;
}

//===----------------------------------------------------------------------===//
// Names
//===----------------------------------------------------------------------===//

namespace {

/// Checks that every name used in a def or model is defined somewhere: a
/// parameter, a dimension, a variable of the body, a top-level name of the
/// module, or a builtin. Use before assignment is caught by elaboration.
class NameResolver {
public:
  NameResolver(Sema &sema, const ModuleInfo &m) : sema(sema), m(m) {}

  void function(const std::vector<Param> &params, const TypeExpr *result,
                const Block &body) {
    locals.clear();
    for (const Param &p : params) {
      locals.insert(p.name);
      for (const DimExpr &d : p.type.dims)
        if (d.isName())
          locals.insert(d.name);
    }
    if (result)
      for (const DimExpr &d : result->dims)
        if (d.isName() && !locals.count(d.name) && !isGlobal(d.name))
          sema.error(d.loc, "dimension '" + d.name +
                                "' of the result type is not a dimension of "
                                "any parameter");
    collectAssigned(body);
    block(body);
  }

private:
  bool isGlobal(const std::string &n) const {
    return m.defs.count(n) || m.consts.count(n) || m.imports.count(n) ||
           Sema::isBuiltin(n) || Sema::isSettingCtor(n);
  }

  void collectAssigned(const Block &b) {
    for (const StmtPtr &s : b) {
      if (auto *a = dyn_cast<AssignStmt>(s.get()))
        locals.insert(a->name);
      else if (auto *f = dyn_cast<ForStmt>(s.get())) {
        locals.insert(f->var);
        collectAssigned(f->body);
      } else if (auto *t = dyn_cast<TaskGraphStmt>(s.get()))
        collectAssigned(t->body);
    }
  }

  void block(const Block &b) {
    for (const StmtPtr &s : b) {
      if (auto *a = dyn_cast<AssignStmt>(s.get()))
        expr(*a->value);
      else if (auto *r = dyn_cast<ReturnStmt>(s.get()))
        expr(*r->value);
      else if (auto *e = dyn_cast<ExprStmt>(s.get()))
        expr(*e->value);
      else if (auto *f = dyn_cast<ForStmt>(s.get())) {
        for (const ExprPtr &x : f->rangeArgs)
          expr(*x);
        block(f->body);
      } else if (auto *t = dyn_cast<TaskGraphStmt>(s.get())) {
        if (t->count)
          expr(*t->count);
        block(t->body);
      } else if (auto *d = dyn_cast<DefaultStmt>(s.get())) {
        if (d->count)
          expr(*d->count);
      }
    }
  }

  void unknown(const std::string &name, Loc loc) {
    std::vector<std::string> candidates(locals.begin(), locals.end());
    for (const auto &kv : m.defs)
      candidates.push_back(kv.first);
    for (const auto &kv : m.consts)
      candidates.push_back(kv.first);
    for (const auto &kv : m.imports)
      candidates.push_back(kv.first);
    for (const std::string &b : builtinNames())
      candidates.push_back(b);
    std::string msg = "unknown name '" + name + "'";
    std::string best = closestMatch(name, candidates);
    if (!best.empty())
      msg += "; did you mean '" + best + "'?";
    sema.error(loc, msg);
  }

  void expr(const Expr &e) {
    if (auto *n = dyn_cast<NameExpr>(&e)) {
      if (!locals.count(n->name) && !isGlobal(n->name)) {
        if (m.models.count(n->name))
          sema.error(n->getLoc(), "'" + n->name +
                                      "' is a model; models cannot "
                                      "be called, put shared layers in a def");
        else
          unknown(n->name, n->getLoc());
      }
    } else if (auto *a = dyn_cast<AttrExpr>(&e)) {
      expr(*a->base);
      auto *base = dyn_cast<NameExpr>(a->base.get());
      if (base && !locals.count(base->name)) {
        auto it = m.imports.find(base->name);
        if (it != m.imports.end() && !it->second->defs.count(a->name) &&
            !it->second->consts.count(a->name)) {
          std::vector<std::string> names;
          for (const auto &kv : it->second->defs)
            names.push_back(kv.first);
          for (const auto &kv : it->second->consts)
            names.push_back(kv.first);
          std::string msg =
              "module '" + it->second->name + "' has no '" + a->name + "'";
          std::string best = closestMatch(a->name, names);
          if (!best.empty())
            msg += "; did you mean '" + best + "'?";
          sema.error(a->nameLoc, msg);
        }
      }
    } else if (auto *c = dyn_cast<CallExpr>(&e)) {
      expr(*c->callee);
      for (const CallArg &arg : c->args)
        expr(*arg.value);
    } else if (auto *b = dyn_cast<BinaryExpr>(&e)) {
      expr(*b->lhs);
      expr(*b->rhs);
    } else if (auto *u = dyn_cast<UnaryExpr>(&e)) {
      expr(*u->operand);
    } else if (auto *l = dyn_cast<ListExpr>(&e)) {
      for (const ExprPtr &x : l->elems)
        expr(*x);
    }
  }

  Sema &sema;
  const ModuleInfo &m;
  std::set<std::string> locals;
};

} // namespace

void Sema::resolveNames(const ModuleInfo &m) {
  NameResolver r(*this, m);
  for (const auto &kv : m.defs)
    r.function(kv.second->params, kv.second->result.get(), kv.second->body);
  for (const auto &kv : m.models)
    r.function(kv.second->params, nullptr, kv.second->body);
}

//===----------------------------------------------------------------------===//
// Recursion
//===----------------------------------------------------------------------===//

namespace {
struct CallEdge {
  const DefDecl *callee;
  Loc loc;
};

void collectCalls(const ModuleInfo &m, const std::set<std::string> &shadowed,
                  const Expr &e, std::vector<CallEdge> &out) {
  if (auto *c = dyn_cast<CallExpr>(&e)) {
    if (auto *n = dyn_cast<NameExpr>(c->callee.get())) {
      auto it = m.defs.find(n->name);
      if (!shadowed.count(n->name) && it != m.defs.end())
        out.push_back({it->second, c->getLoc()});
    } else if (auto *a = dyn_cast<AttrExpr>(c->callee.get())) {
      if (auto *base = dyn_cast<NameExpr>(a->base.get())) {
        auto mod = m.imports.find(base->name);
        if (!shadowed.count(base->name) && mod != m.imports.end()) {
          auto it = mod->second->defs.find(a->name);
          if (it != mod->second->defs.end())
            out.push_back({it->second, c->getLoc()});
        }
      }
    }
    collectCalls(m, shadowed, *c->callee, out);
    for (const CallArg &arg : c->args)
      collectCalls(m, shadowed, *arg.value, out);
  } else if (auto *a = dyn_cast<AttrExpr>(&e)) {
    collectCalls(m, shadowed, *a->base, out);
  } else if (auto *b = dyn_cast<BinaryExpr>(&e)) {
    collectCalls(m, shadowed, *b->lhs, out);
    collectCalls(m, shadowed, *b->rhs, out);
  } else if (auto *u = dyn_cast<UnaryExpr>(&e)) {
    collectCalls(m, shadowed, *u->operand, out);
  } else if (auto *l = dyn_cast<ListExpr>(&e)) {
    for (const ExprPtr &x : l->elems)
      collectCalls(m, shadowed, *x, out);
  }
}

void collectCalls(const ModuleInfo &m, const std::set<std::string> &shadowed,
                  const Block &b, std::vector<CallEdge> &out) {
  for (const StmtPtr &s : b) {
    if (auto *a = dyn_cast<AssignStmt>(s.get()))
      collectCalls(m, shadowed, *a->value, out);
    else if (auto *r = dyn_cast<ReturnStmt>(s.get()))
      collectCalls(m, shadowed, *r->value, out);
    else if (auto *e = dyn_cast<ExprStmt>(s.get()))
      collectCalls(m, shadowed, *e->value, out);
    else if (auto *f = dyn_cast<ForStmt>(s.get()))
      collectCalls(m, shadowed, f->body, out);
    else if (auto *t = dyn_cast<TaskGraphStmt>(s.get()))
      collectCalls(m, shadowed, t->body, out);
  }
}
} // namespace

void Sema::checkRecursion() {
  std::map<const DefDecl *, std::vector<CallEdge>> edges;
  for (const auto &m : modules)
    for (const auto &kv : m->defs) {
      std::set<std::string> shadowed;
      for (const Param &p : kv.second->params)
        shadowed.insert(p.name);
      collectCalls(*m, shadowed, kv.second->body, edges[kv.second]);
    }
  // Iterative depth-first search; a back edge closes a cycle.
  enum Color { White, Grey, Black };
  std::map<const DefDecl *, Color> color;
  for (const auto &root : edges) {
    if (color[root.first] != White)
      continue;
    std::vector<std::pair<const DefDecl *, size_t>> stack = {{root.first, 0}};
    color[root.first] = Grey;
    while (!stack.empty()) {
      auto &[def, next] = stack.back();
      const std::vector<CallEdge> &out = edges[def];
      if (next == out.size()) {
        color[def] = Black;
        stack.pop_back();
        continue;
      }
      const CallEdge &edge = out[next++];
      if (color[edge.callee] == Grey) {
        std::string chain;
        bool inCycle = false;
        for (const auto &frame : stack) {
          if (frame.first == edge.callee)
            inCycle = true;
          if (inCycle)
            chain += frame.first->name + " -> ";
        }
        chain += edge.callee->name;
        error(edge.loc, "recursive call of '" + edge.callee->name + "' (" +
                            chain +
                            "); calls are inlined at compile time, "
                            "so a def cannot call itself");
      } else if (color[edge.callee] == White) {
        color[edge.callee] = Grey;
        stack.push_back({edge.callee, 0});
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Config and train blocks
//===----------------------------------------------------------------------===//

namespace {
struct KeyRule {
  const char *key;
  const char *what; // for messages
};
const KeyRule kConfigKeys[] = {
    {"num_micro_batch", "an integer from 1 to 1048576"},
    {"num_task_graph", "an integer from 1 to 1024"},
    {"task_graph_split", "an integer from 1 to 1024"},
    {"bucket_bytes", "an integer from 1 to 2^40"},
    {"auto_parallel", "true or false"},
    {"recompute", "true or false"},
    {"shard_optimizer", "true or false"},
    {"shard_parameters", "true or false"},
    {"shard_gradients", "true or false"},
    {"schedule", "\"gpipe\" or \"1f1b\""},
    {"balance", "\"even\" or \"hardware\""},
    {"split_matmul", "\"auto\", \"column\", \"row\" or \"replicated\""},
    {"split_rows", "\"part\" or \"whole\""},
    {"amp", "\"off\" or \"bf16\""},
    {"grad_sync", "\"overlap\" or \"after_backward\""},
    {"virtual_stages", "an integer from 1 to 1024"},
    {"gather_layers", "an integer from 1 to 1024"},
    {"shard_group", "an integer from 0 to 1024 (0: every replica)"},
    {"gather_every", "\"micro_batch\" or \"step\""},
};
const KeyRule kTrainKeys[] = {
    {"data",
     "a data source: synthetic(...), text(...), tokens(...) or arrays(...)"},
    {"eval_data", "a data source of held-out samples, as data"},
    {"eval_every", "a positive integer"},
    {"eval_steps", "a positive integer"},
    {"optimizer", "an optimizer: sgd(...), adam(...) or adamw(...)"},
    {"steps", "an integer from 1 to 2^40"},
    {"seed", "a non-negative integer"},
    {"lr_schedule", "a schedule: constant() or cosine(...)"},
    {"clip_grad_norm", "a positive number"},
    {"log_every", "a positive integer"},
    {"save_every", "a positive integer"},
};

template <size_t N>
const KeyRule *findKey(const KeyRule (&rules)[N], const std::string &key) {
  for (const KeyRule &r : rules)
    if (key == r.key)
      return &r;
  return nullptr;
}

template <size_t N>
std::string unknownKeyMessage(const KeyRule (&rules)[N], const std::string &key,
                              const char *block) {
  std::vector<std::string> names;
  for (const KeyRule &r : rules)
    names.push_back(r.key);
  std::string msg = "unknown " + std::string(block) + " key '" + key + "'";
  std::string best = closestMatch(key, names);
  if (!best.empty())
    return msg + "; did you mean '" + best + "'?";
  msg += "; the keys are:";
  for (const std::string &n : names)
    msg += " " + n;
  return msg;
}
/// The setting a config key takes from `v`; false when `v` is not what the
/// key needs (its rule's `what`).
bool configSetting(const std::string &key, const SVal &v, Setting &s) {
  auto oneOf = [&](std::initializer_list<const char *> allowed) {
    if (v.kind != SVal::Kind::Str ||
        std::none_of(allowed.begin(), allowed.end(),
                     [&](const char *a) { return v.s == a; }))
      return false;
    s = Setting::ofStr(v.s);
    return true;
  };
  if (key == "num_micro_batch" || key == "num_task_graph" ||
      key == "task_graph_split" || key == "virtual_stages" ||
      key == "gather_layers" || key == "shard_group") {
    s = Setting::ofInt(v.i.value);
    int64_t most = key == "num_micro_batch" ? kMaxMicroBatches : kMaxTaskGraphs;
    // No sharding groups (shard_group = 0) is the default, and what whale
    // search sets where its candidate shards over every replica.
    int64_t least = key == "shard_group" ? 0 : 1;
    return v.kind == SVal::Kind::Int && v.i.isKnown() && v.i.value >= least &&
           v.i.value <= most;
  }
  if (key == "bucket_bytes") {
    s = Setting::ofInt(v.i.value);
    return v.kind == SVal::Kind::Int && v.i.isKnown() && v.i.value >= 1 &&
           v.i.value <= (int64_t(1) << 40);
  }
  if (key == "auto_parallel" || key == "recompute" ||
      key == "shard_optimizer" || key == "shard_parameters" ||
      key == "shard_gradients") {
    s = Setting::ofBool(v.b);
    return v.kind == SVal::Kind::Bool;
  }
  if (key == "schedule")
    return oneOf({"gpipe", "1f1b"});
  if (key == "balance")
    return oneOf({"even", "hardware"});
  if (key == "amp")
    return oneOf({"off", "bf16"});
  if (key == "split_matmul")
    return oneOf({"auto", "column", "row", "replicated"});
  if (key == "split_rows")
    return oneOf({"part", "whole"});
  if (key == "grad_sync")
    return oneOf({"overlap", "after_backward"});
  if (key == "gather_every")
    return oneOf({"micro_batch", "step"});
  return false;
}

/// A `--config` value as written: an integer, true/false, else a string.
/// A `--config` value as the evaluator's: an integer, a bool or a string.
SVal svalOf(const ConfigValue &value) {
  if (const auto *i = std::get_if<int64_t>(&value))
    return SVal::ofInt(Dim::known(*i));
  if (const auto *b = std::get_if<bool>(&value))
    return SVal::ofBool(*b);
  return SVal::ofStr(std::get<std::string>(value));
}
} // namespace

void Sema::checkConfig(const ModuleInfo &m) {
  std::map<std::string, Loc> keyLocs; // the script's keys, where written
  const ConfigDecl *first = nullptr;
  frames.push_back(Frame{});
  frames.back().module = &m;
  for (const DeclPtr &d : m.ast->decls) {
    auto *c = dyn_cast<ConfigDecl>(d.get());
    if (!c)
      continue;
    if (first) {
      error(c->getLoc(), "a script has one config block");
      note(first->getLoc(), "the first config block is here");
      continue;
    }
    first = c;
    std::set<std::string> seen;
    for (const KeyValue &kv : c->entries) {
      const KeyRule *rule = findKey(kConfigKeys, kv.key);
      if (!rule) {
        error(kv.keyLoc, unknownKeyMessage(kConfigKeys, kv.key, "config"));
        continue;
      }
      if (!seen.insert(kv.key).second) {
        error(kv.keyLoc, "config key '" + kv.key + "' is set twice");
        continue;
      }
      SVal v = eval(*kv.value);
      if (v.isError())
        continue;
      Loc loc = kv.value->getLoc();
      Setting s;
      bool ok = configSetting(kv.key, v, s);
      if (!ok) {
        error(loc, "config key '" + kv.key + "' must be " + rule->what +
                       ", got " +
                       (v.kind == SVal::Kind::Int && v.i.isKnown()
                            ? std::to_string(v.i.value)
                            : describe(v) + (v.kind == SVal::Kind::Str
                                                 ? " \"" + v.s + "\""
                                                 : "")));
        continue;
      }
      config.push_back({kv.key, s});
      keyLocs[kv.key] = kv.keyLoc;
    }
  }
  frames.pop_back();
  // `--config KEY=VALUE` replaces the script's value or adds the key.
  for (const auto &[key, value] : fe.getOptions().configs) {
    std::string flag = "--config " + key + "=" + configText(value);
    const KeyRule *rule = findKey(kConfigKeys, key);
    if (!rule) {
      error(Loc{}, flag + ": " + unknownKeyMessage(kConfigKeys, key, "config"));
      continue;
    }
    SVal v = svalOf(value);
    Setting s;
    if (!configSetting(key, v, s)) {
      error(Loc{}, flag + ": '" + key + "' must be " + rule->what);
      continue;
    }
    auto at = std::find_if(config.begin(), config.end(),
                           [&](const auto &kv) { return kv.first == key; });
    if (at != config.end())
      at->second = s;
    else
      config.push_back({key, s});
    keyLocs.erase(key);
  }
  // A unit of several gathered layers means something only where
  // parameters are sharded (and so gathered); 1, the default, anywhere
  // (whale search sets it where its candidate shards nothing).
  auto valueOf = [&](const char *key) -> const Setting * {
    for (const auto &kv : config)
      if (kv.first == key)
        return &kv.second;
    return nullptr;
  };
  const Setting *sharded = valueOf("shard_parameters");
  const Setting *layers = valueOf("gather_layers");
  if (layers && layers->i > 1 && !(sharded && sharded->b)) {
    auto at = keyLocs.find("gather_layers");
    error(at != keyLocs.end() ? at->second : Loc{},
          std::string(at != keyLocs.end() ? "" : "--config ") +
              "gather_layers needs shard_parameters = true: only sharded "
              "parameters are gathered");
  }
  if (valueOf("gather_every") && !(sharded && sharded->b)) {
    auto at = keyLocs.find("gather_every");
    error(at != keyLocs.end() ? at->second : Loc{},
          std::string(at != keyLocs.end() ? "" : "--config ") +
              "gather_every needs shard_parameters = true: only sharded "
              "parameters are gathered");
  }
  // Groups of sharding ranks where something is sharded.
  auto on = [&](const char *key) {
    const Setting *s = valueOf(key);
    return s && s->b;
  };
  const Setting *groups = valueOf("shard_group");
  if (groups && groups->i > 0 && !on("shard_optimizer") &&
      !on("shard_gradients") && !on("shard_parameters")) {
    auto at = keyLocs.find("shard_group");
    error(at != keyLocs.end() ? at->second : Loc{},
          std::string(at != keyLocs.end() ? "" : "--config ") +
              "shard_group needs shard_optimizer, shard_gradients or "
              "shard_parameters = true: only sharded state is sharded in "
              "groups");
  }
}

std::optional<Settings> Sema::checkTrain(const TrainDecl &t,
                                         const ModelDecl &model) {
  Settings out;
  std::set<std::string> seen;
  bool ok = true;
  for (const KeyValue &kv : t.entries) {
    const KeyRule *rule = findKey(kTrainKeys, kv.key);
    if (!rule) {
      error(kv.keyLoc, unknownKeyMessage(kTrainKeys, kv.key, "train"));
      ok = false;
      continue;
    }
    if (!seen.insert(kv.key).second) {
      error(kv.keyLoc, "train key '" + kv.key + "' is set twice");
      ok = false;
      continue;
    }
    SVal v = eval(*kv.value);
    if (v.isError()) {
      ok = false;
      continue;
    }
    Loc loc = kv.value->getLoc();
    bool good = false;
    if (kv.key == "data" || kv.key == "eval_data" || kv.key == "optimizer" ||
        kv.key == "lr_schedule") {
      const char *category = kv.key == "optimizer"     ? "optimizer"
                             : kv.key == "lr_schedule" ? "schedule"
                                                       : "data";
      good = v.kind == SVal::Kind::Setting && v.category == category;
    } else if (kv.key == "clip_grad_norm") {
      good = (v.kind == SVal::Kind::Float && v.f > 0) ||
             (v.kind == SVal::Kind::Int && v.i.isKnown() && v.i.value > 0);
      if (good && v.kind == SVal::Kind::Int)
        v = SVal::ofFloat(static_cast<double>(v.i.value));
    } else if (kv.key == "seed") {
      good = v.kind == SVal::Kind::Int && v.i.isKnown();
    } else if (kv.key == "steps") {
      good = v.kind == SVal::Kind::Int && v.i.isKnown() && v.i.value >= 1 &&
             v.i.value <= kMaxSteps;
    } else {
      good = v.kind == SVal::Kind::Int && v.i.isKnown() && v.i.value >= 1;
    }
    if (!good) {
      bool number = v.kind == SVal::Kind::Int && v.i.isKnown();
      error(loc, "train key '" + kv.key + "' must be " + rule->what + ", got " +
                     (number ? std::to_string(v.i.value) : describe(v)));
      ok = false;
      continue;
    }
    std::optional<Setting> s = toSetting(v, loc);
    if (!s) {
      ok = false;
      continue;
    }
    out.push_back({kv.key, *s});
  }
  for (const char *required : {"data", "optimizer", "steps"})
    if (!seen.count(required)) {
      error(t.getLoc(),
            "train block of '" + t.model + "' needs '" + required + "'");
      ok = false;
    }
  // Held-out evaluation reads eval_data, at the training batch (the model's
  // shapes are the batch's).
  const Setting *evalData = nullptr, *trainData = nullptr;
  bool evalEvery = false;
  for (const auto &kv : out) {
    if (kv.first == "eval_data")
      evalData = &kv.second;
    if (kv.first == "data")
      trainData = &kv.second;
    evalEvery |= kv.first == "eval_every";
  }
  if (evalEvery && !evalData) {
    error(t.getLoc(), "train block of '" + t.model +
                          "' sets eval_every but no eval_data to evaluate on");
    ok = false;
  }
  if (evalData && trainData &&
      evalData->get("batch")->i != trainData->get("batch")->i) {
    error(t.getLoc(), "eval_data's batch (" +
                          std::to_string(evalData->get("batch")->i) +
                          ") must be the data's (" +
                          std::to_string(trainData->get("batch")->i) +
                          "): the model is elaborated at one batch");
    ok = false;
  }
  if (!ok)
    return std::nullopt;

  // The data must fit the model: its batch divides into micro-batches, and a
  // text source's sequence length is the model's.
  const Setting *data = nullptr;
  for (const auto &kv : out)
    if (kv.first == "data")
      data = &kv.second;
  int64_t batch = data->get("batch")->i;
  int64_t samples = 0;
  for (const auto &kv : out)
    if (kv.first == "steps" &&
        !productWithin(kv.second.i, batch, kMaxSamples, samples)) {
      error(t.getLoc(), std::to_string(kv.second.i) + " steps of a batch of " +
                            std::to_string(batch) +
                            " are more than 2^62 samples");
      return std::nullopt;
    }
  for (const auto &kv : config)
    if (kv.first == "num_micro_batch" && batch % kv.second.i != 0) {
      error(t.getLoc(), "the global batch of " + std::to_string(batch) +
                            " cannot be cut into " +
                            std::to_string(kv.second.i) +
                            " equal micro-batches (num_micro_batch)");
      return std::nullopt;
    }
  if (data->get("kind")->s == "text" || data->get("kind")->s == "tokens") {
    int64_t seq = data->get("seq")->i;
    for (const Param &p : model.params) {
      if (p.type.dims.size() < 2)
        continue;
      const DimExpr &d = p.type.dims[1];
      std::optional<int64_t> extent;
      if (!d.isName())
        extent = d.value;
      else if (auto it = modules.front()->constValues.find(d.name);
               it != modules.front()->constValues.end() &&
               it->second.kind == SVal::Kind::Int && it->second.i.isKnown())
        extent = it->second.i.value;
      if (extent && *extent != seq) {
        error(t.getLoc(), data->get("kind")->s + " data of sequence length " +
                              std::to_string(seq) + " does not fit input '" +
                              p.name + "' of '" + model.name + "', which has " +
                              std::to_string(*extent) + " positions");
        return std::nullopt;
      }
    }
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

std::optional<Program> Sema::run() {
  const FileAST *mainAST = fe.mainAST();
  const ModuleInfo *main = loadModule(*mainAST, "main", true);
  for (const auto &m : modules)
    resolveNames(*m);
  checkRecursion();
  if (diags.hasErrors())
    return std::nullopt;
  checkConfig(*main);

  Program program;
  std::map<std::string, const TrainDecl *> trains;
  for (const DeclPtr &d : mainAST->decls) {
    auto *t = dyn_cast<TrainDecl>(d.get());
    if (!t)
      continue;
    if (!main->models.count(t->model)) {
      std::vector<std::string> names;
      for (const auto &kv : main->models)
        names.push_back(kv.first);
      std::string msg = "train block names unknown model '" + t->model + "'";
      std::string best = closestMatch(t->model, names);
      if (!best.empty())
        msg += "; did you mean '" + best + "'?";
      error(t->modelLoc, msg);
      continue;
    }
    if (trains.count(t->model)) {
      error(t->getLoc(), "model '" + t->model + "' has two train blocks");
      note(trains[t->model]->getLoc(), "the first is here");
      continue;
    }
    trains[t->model] = t;
  }

  for (const DeclPtr &d : mainAST->decls) {
    auto *model = dyn_cast<ModelDecl>(d.get());
    if (!model || main->models.at(model->name) != model)
      continue;
    std::map<std::string, int64_t> dims = fe.getOptions().dims;
    std::optional<Settings> train;
    if (auto it = trains.find(model->name); it != trains.end()) {
      frames.push_back(Frame{});
      frames.back().module = main;
      train = checkTrain(*it->second, *model);
      frames.pop_back();
    }
    // A broken train block still lets the model's body be checked, with its
    // batch left symbolic, so one run reports both.
    if (train) {
      // The data's batch is the model's leading (batch) dimension.
      for (const auto &kv : *train)
        if (kv.first == "data")
          for (const Param &p : model->params)
            if (!p.type.dims.empty() && p.type.dims[0].isName())
              dims[p.type.dims[0].name] =
                  fe.getOptions().batch.value_or(kv.second.get("batch")->i);
    }
    std::optional<ModelGraph> g =
        elaborateModel(*main, *model, dims, std::move(train));
    if (g)
      program.models.push_back(std::move(*g));
  }
  if (diags.hasErrors())
    return std::nullopt;
  program.config = config;
  for (const DeclPtr &d : mainAST->decls)
    if (auto *c = dyn_cast<ConstDecl>(d.get())) {
      auto it = main->constValues.find(c->name);
      if (it == main->constValues.end())
        continue;
      const SVal &v = it->second;
      if ((v.kind == SVal::Kind::Int && v.i.isKnown()) ||
          v.kind == SVal::Kind::Float || v.kind == SVal::Kind::Bool ||
          v.kind == SVal::Kind::Str)
        if (std::optional<Setting> s = toSetting(v, c->getLoc()))
          program.constants.push_back({c->name, *s});
    }
  return program;
}

std::optional<Program> runSema(Frontend &frontend) {
  return Sema(frontend).run();
}

} // namespace whale::lang
