//===- Elaborate.cpp - runs model and def bodies into a flat graph --------===//
//
// Elaboration is an interpreter over compile-time values: loops unroll, defs
// inline with a fresh frame per call (so each call site makes its own
// parameters, named by the call path), and every tensor operation becomes a
// Node whose shape is checked on the spot. Shapes may hold symbols (the
// batch) when the script binds none; they are then checked symbolically.
//
//===----------------------------------------------------------------------===//

#include "lang/SemaImpl.h"
#include "support/Limits.h"

#include "llvm/Support/Casting.h"

#include <cassert>

using llvm::dyn_cast;

namespace whale::lang {

namespace {
constexpr size_t kMaxCallDepth = 32;
}

bool ModelGraph::isKnown() const {
  for (const ModelInput &in : inputs)
    if (!in.type.isKnown())
      return false;
  for (const Node &n : nodes)
    if (!n.type.isKnown())
      return false;
  return true;
}

const char *nodeOpName(NodeOp op) {
  switch (op) {
#define WHALE_NODE_OP(Enumerator, Mnemonic, OpClass)                           \
  case NodeOp::Enumerator:                                                     \
    return Mnemonic;
#include "lang/NodeOps.def"
  }
  return "?";
}

int Sema::addNode(NodeOp op, std::vector<int> operands, TensorType type,
                  Loc loc,
                  std::vector<std::pair<std::string, NodeAttr>> attrs) {
  // Every tensor comes from a model input or param(), both of which exist
  // only while a model is elaborated; param() checks this for the user.
  assert(graph && "tensor operation outside a model");
  Node n;
  n.op = op;
  n.operands = std::move(operands);
  n.type = std::move(type);
  n.attrs = std::move(attrs);
  n.loc = loc;
  n.taskgraph = currentTaskGraph;
  graph->nodes.push_back(std::move(n));
  return static_cast<int>(graph->inputs.size() + graph->nodes.size() - 1);
}

int Sema::constantLike(double value, DType dtype, Loc loc) {
  return addNode(NodeOp::constant, {}, TensorType{dtype, {}}, loc,
                 {{"value", NodeAttr(value)}});
}

std::optional<int64_t> Sema::knownInt(const SVal &v, Loc loc,
                                      const char *what) {
  if (v.isError())
    return std::nullopt;
  if (v.kind != SVal::Kind::Int) {
    error(loc, std::string(what) + " must be an integer, got " + describe(v));
    return std::nullopt;
  }
  if (!v.i.isKnown()) {
    error(loc, std::string(what) +
                   " must be known at compile time, but it "
                   "depends on '" +
                   v.i.sym + "'");
    return std::nullopt;
  }
  return v.i.value;
}

//===----------------------------------------------------------------------===//
// Models
//===----------------------------------------------------------------------===//

std::optional<ModelGraph>
Sema::elaborateModel(const ModuleInfo &m, const ModelDecl &model,
                     const std::map<std::string, int64_t> &dims,
                     std::optional<Settings> train) {
  ModelGraph g;
  g.name = model.name;
  g.train = std::move(train);
  g.loc = model.nameLoc;
  graph = &g;
  frames.clear();
  frames.push_back(Frame{});
  Frame &top = frames.back();
  top.module = &m;
  top.path = model.name;
  currentTaskGraph = -1;
  defaultSeen = false;
  callSites.clear();
  size_t errorsBefore = diags.errorCount();

  std::string batchSym;
  Loc batchLoc;
  for (const Param &p : model.params) {
    if (p.type.kind != TypeExpr::Kind::Tensor) {
      error(p.loc, "model inputs are tensors; '" + p.name +
                       "' needs a type such as f32[B, 16]");
      continue;
    }
    TensorType t;
    t.dtype = *parseDType(p.type.dtype);
    for (size_t i = 0; i < p.type.dims.size(); ++i) {
      const DimExpr &d = p.type.dims[i];
      if (d.isEllipsis()) {
        error(d.loc, "model inputs have a fixed rank; '...' is for defs");
        t.dims.push_back(Dim::known(1));
        continue;
      }
      if (!d.isName()) {
        t.dims.push_back(Dim::known(d.value));
        continue;
      }
      auto c = m.constValues.find(d.name);
      if (c != m.constValues.end()) {
        if (c->second.kind == SVal::Kind::Int && c->second.i.isKnown() &&
            c->second.i.value >= 1) {
          t.dims.push_back(c->second.i);
        } else {
          error(d.loc, "dimension '" + d.name +
                           "' must be a positive "
                           "integer constant, but it is " +
                           describe(c->second));
          t.dims.push_back(Dim::known(1));
        }
        continue;
      }
      if (auto b = dims.find(d.name); b != dims.end()) {
        if (b->second < 1)
          error(d.loc, "dimension '" + d.name + "' is bound to " +
                           std::to_string(b->second) + "; it must be >= 1");
        t.dims.push_back(Dim::known(std::max<int64_t>(1, b->second)));
      } else if (i == 0) {
        t.dims.push_back(Dim::symbol(d.name));
      } else {
        error(d.loc, "dimension '" + d.name + "' of input '" + p.name +
                         "' is not known: only the leading (batch) "
                         "dimension comes from the data; define '" +
                         d.name + " = ...' at the top level or pass --dim " +
                         d.name + "=N");
        t.dims.push_back(Dim::known(1));
        continue;
      }
      if (i == 0) {
        if (batchSym.empty()) {
          batchSym = d.name;
          batchLoc = d.loc;
        } else if (batchSym != d.name) {
          error(d.loc, "inputs disagree on the batch dimension: '" + d.name +
                           "' here, '" + batchSym + "' before");
          note(batchLoc, "the first batch dimension is here");
        }
      }
      top.locals[d.name] = SVal::ofInt(t.dims.back());
    }
    int id = static_cast<int>(g.inputs.size());
    g.inputs.push_back({p.name, t, p.loc});
    if (top.locals.count(p.name))
      error(p.loc, "'" + p.name + "' is both an input and a dimension name");
    top.locals[p.name] = SVal::ofTensor(id);
  }

  execBlock(model.body);
  Frame &done = frames.back();
  if (stepLimitReported) {
    // The body was cut short; whatever it lacks is not the user's mistake.
  } else if (!done.returned) {
    error(model.nameLoc, "model '" + model.name +
                             "' has no return; a model "
                             "returns its loss");
  } else if (done.result.kind != SVal::Kind::Tensor) {
    if (!done.result.isError())
      error(model.nameLoc, "model '" + model.name +
                               "' must return a tensor, "
                               "but returns " +
                               describe(done.result));
  } else {
    g.result = done.result.tensor;
    const TensorType &rt = g.typeOf(g.result);
    if (g.train && (rt.rank() != 0 || !isFloat(rt.dtype)))
      error(model.nameLoc, "a trained model returns a scalar loss, but '" +
                               model.name + "' returns " + rt.str());
  }
  frames.clear();
  graph = nullptr;
  if (diags.errorCount() != errorsBefore)
    return std::nullopt;
  return g;
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

bool Sema::execBlock(const Block &block) {
  for (const StmtPtr &sp : block) {
    Frame &frame = frames.back();
    if (frame.returned) {
      diags.warning(sp->getLoc(),
                    "this statement follows a return and never runs");
      return false;
    }
    if (!countStep(sp->getLoc()))
      return false;
    if (diags.tooMany())
      return false;
    const Stmt *s = sp.get();
    if (auto *a = dyn_cast<AssignStmt>(s)) {
      // `w = param(...)` names the parameter `w`; nothing else does.
      if (llvm::isa<CallExpr>(a->value.get()))
        nameHint = a->name;
      SVal v = eval(*a->value);
      nameHint.clear();
      frames.back().locals[a->name] = std::move(v);
    } else if (auto *r = dyn_cast<ReturnStmt>(s)) {
      SVal v = eval(*r->value);
      frames.back().result = std::move(v);
      frames.back().returned = true;
    } else if (auto *e = dyn_cast<ExprStmt>(s)) {
      eval(*e->value);
    } else if (auto *f = dyn_cast<ForStmt>(s)) {
      std::vector<int64_t> bounds;
      bool ok = true;
      for (const ExprPtr &x : f->rangeArgs) {
        std::optional<int64_t> v =
            knownInt(eval(*x), x->getLoc(), "a range bound");
        ok = ok && v;
        bounds.push_back(v.value_or(0));
      }
      if (!ok)
        continue;
      int64_t start = bounds.size() > 1 ? bounds[0] : 0;
      int64_t end = bounds.size() > 1 ? bounds[1] : bounds[0];
      int64_t step = bounds.size() > 2 ? bounds[2] : 1;
      if (step == 0) {
        error(f->rangeArgs[2]->getLoc(), "range() step must not be 0");
        continue;
      }
      for (int64_t i = start; step > 0 ? i < end : i > end; i += step) {
        // Iterations count too, so even an empty body cannot spin forever.
        if (!countStep(f->getLoc()))
          break;
        frames.back().locals[f->var] = SVal::ofInt(Dim::known(i));
        if (!execBlock(f->body) || stepLimitReported)
          break;
        // Stop before i += step would overflow.
        if (step > 0 ? i > INT64_MAX - step : i < INT64_MIN - step)
          break;
      }
      if (frames.back().returned)
        return false;
    } else if (auto *t = dyn_cast<TaskGraphStmt>(s)) {
      const char *kind = strategyName(t->strategy);
      if (currentTaskGraph >= 0) {
        error(t->getLoc(),
              std::string(kind) + " block inside another " +
                  strategyName(graph->taskgraphs[currentTaskGraph].strategy) +
                  " block; TaskGraphs cannot nest");
        note(graph->taskgraphs[currentTaskGraph].loc,
             "the enclosing block is here");
        continue;
      }
      // Each TaskGraph is a unit the planner places and compiles: a bound
      // keeps what one script may ask for in reach (loops unroll here, so
      // one line in a loop can ask for thousands).
      if (static_cast<int64_t>(graph->taskgraphs.size()) >= kMaxTaskGraphs) {
        error(t->getLoc(), std::string(kind) + " block number " +
                               std::to_string(graph->taskgraphs.size() + 1) +
                               " of model '" + graph->name +
                               "': a model has at most " +
                               std::to_string(kMaxTaskGraphs) +
                               " TaskGraphs; merge neighbouring blocks of one "
                               "strategy");
        return false;
      }
      TaskGraphInfo info;
      info.strategy = t->strategy;
      info.loc = t->getLoc();
      if (t->count) {
        std::optional<int64_t> n =
            knownInt(eval(*t->count), t->count->getLoc(), "a device count");
        if (!n)
          continue;
        if (*n < 1) {
          error(t->count->getLoc(),
                "a device count must be at least 1, got " + std::to_string(*n));
          continue;
        }
        info.devices = *n;
      }
      graph->taskgraphs.push_back(info);
      currentTaskGraph = static_cast<int>(graph->taskgraphs.size() - 1);
      size_t firstNode = graph->nodes.size();
      execBlock(t->body);
      int tg = currentTaskGraph;
      currentTaskGraph = -1;
      // At a planner's micro-batch the global batch was checked already.
      if (tg >= 0 && info.devices > 1 && !fe.getOptions().batch)
        checkDivisible(tg, firstNode);
      if (frames.back().returned)
        return false;
    } else if (auto *d = dyn_cast<DefaultStmt>(s)) {
      if (frames.size() != 1 || currentTaskGraph >= 0) {
        error(d->getLoc(),
              "'default' belongs at the top level of a model body");
        continue;
      }
      if (defaultSeen) {
        error(d->getLoc(), "the default strategy is already set");
        continue;
      }
      defaultSeen = true;
      graph->defaultStrategy = d->strategy;
      if (d->count) {
        std::optional<int64_t> n =
            knownInt(eval(*d->count), d->count->getLoc(), "a device count");
        if (n && *n < 1)
          error(d->count->getLoc(), "a device count must be at least 1");
        else if (n)
          graph->defaultDevices = *n;
      }
    }
  }
  return !frames.back().returned;
}

bool Sema::countStep(Loc loc) {
  if (++steps <= fe.getOptions().maxSteps)
    return true;
  if (!stepLimitReported)
    error(loc, "the program unrolls to more than " +
                   std::to_string(fe.getOptions().maxSteps) +
                   " statements; is a range() too large?");
  stepLimitReported = true;
  return false;
}

bool Sema::unevenAllowed() const {
  for (const auto &kv : config)
    if (kv.first == "balance" && kv.second.s == "hardware")
      return true;
  return false;
}

void Sema::checkDivisible(int tg, size_t firstNode) {
  const TaskGraphInfo &info = graph->taskgraphs[tg];
  int64_t n = info.devices;
  // Under hardware balancing the planner may cut unevenly; otherwise every
  // device gets the same share, which must come out whole.
  if (unevenAllowed())
    return;
  if (info.strategy == StrategyKind::Replicate) {
    for (const ModelInput &in : graph->inputs) {
      if (in.type.dims.empty() || !in.type.dims[0].isKnown())
        continue;
      int64_t batch = in.type.dims[0].value;
      if (batch % n != 0) {
        error(info.loc,
              "replicate(" + std::to_string(n) +
                  ") cannot split the "
                  "batch of " +
                  std::to_string(batch) +
                  " evenly; use a "
                  "count that divides it, or balance = \"hardware\" for "
                  "uneven shares");
        return;
      }
    }
    return;
  }
  for (size_t i = firstNode; i < graph->nodes.size(); ++i) {
    const Node &node = graph->nodes[i];
    if (node.op != NodeOp::param || node.type.rank() == 0)
      continue;
    bool divisible = false;
    for (const Dim &d : node.type.dims)
      divisible = divisible || (d.isKnown() && d.value % n == 0);
    if (!divisible) {
      const std::string &name = std::get<std::string>(node.attrs[0].second);
      error(node.loc, "split(" + std::to_string(n) +
                          ") cannot divide any "
                          "dimension of parameter '" +
                          name + "' " + node.type.str() +
                          "; use a count that divides one, or "
                          "balance = \"hardware\" for uneven shards");
      note(info.loc, "the split block is here");
    }
  }
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

SVal Sema::lookup(const std::string &name, Loc loc) {
  Frame &f = frames.back();
  if (auto it = f.locals.find(name); it != f.locals.end())
    return it->second;
  const ModuleInfo *m = f.module;
  if (auto it = m->constValues.find(name); it != m->constValues.end())
    return it->second;
  if (m->consts.count(name)) {
    error(loc, "constant '" + name + "' is used before its definition");
    return SVal::error();
  }
  if (auto it = m->defs.find(name); it != m->defs.end()) {
    SVal v;
    v.kind = SVal::Kind::Def;
    v.def = it->second;
    v.module = m;
    return v;
  }
  if (auto it = m->imports.find(name); it != m->imports.end()) {
    SVal v;
    v.kind = SVal::Kind::Module;
    v.module = it->second;
    return v;
  }
  if (isBuiltin(name) || isSettingCtor(name)) {
    SVal v;
    v.kind = SVal::Kind::Builtin;
    v.s = name;
    return v;
  }
  // Assigned somewhere in the body, but not yet when this line runs.
  if (f.def || frames.size() == 1)
    error(loc, "'" + name + "' is used before it is assigned");
  return SVal::error();
}

SVal Sema::eval(const Expr &e) {
  switch (e.getKind()) {
  case Expr::Kind::Int:
    return SVal::ofInt(Dim::known(llvm::cast<IntExpr>(e).value));
  case Expr::Kind::Float:
    return SVal::ofFloat(llvm::cast<FloatExpr>(e).value);
  case Expr::Kind::String:
    return SVal::ofStr(llvm::cast<StringExpr>(e).value);
  case Expr::Kind::Bool:
    return SVal::ofBool(llvm::cast<BoolExpr>(e).value);
  case Expr::Kind::Name: {
    const auto &n = llvm::cast<NameExpr>(e);
    return lookup(n.name, n.getLoc());
  }
  case Expr::Kind::Attr: {
    const auto &a = llvm::cast<AttrExpr>(e);
    SVal base = eval(*a.base);
    if (base.isError())
      return base;
    if (base.kind != SVal::Kind::Module) {
      error(a.nameLoc, "only modules have members; this is " + describe(base));
      return SVal::error();
    }
    const ModuleInfo *m = base.module;
    if (auto it = m->defs.find(a.name); it != m->defs.end()) {
      SVal v;
      v.kind = SVal::Kind::Def;
      v.def = it->second;
      v.module = m;
      return v;
    }
    if (auto it = m->constValues.find(a.name); it != m->constValues.end())
      return it->second;
    error(a.nameLoc, "module '" + m->name + "' has no '" + a.name + "'");
    return SVal::error();
  }
  case Expr::Kind::Call: {
    const auto &c = llvm::cast<CallExpr>(e);
    std::string hint = std::move(nameHint); // only the outermost call sees it
    nameHint.clear();
    SVal callee = eval(*c.callee);
    if (callee.isError())
      return callee;
    if (callee.kind == SVal::Kind::Def)
      return callDef(*callee.def, *callee.module, c);
    if (callee.kind == SVal::Kind::Builtin) {
      if (isSettingCtor(callee.s))
        return callSetting(callee.s, c);
      nameHint = std::move(hint);
      SVal r = callBuiltin(callee.s, c);
      nameHint.clear();
      return r;
    }
    error(c.getLoc(), "this is " + describe(callee) + ", not a function");
    return SVal::error();
  }
  case Expr::Kind::Binary: {
    const auto &b = llvm::cast<BinaryExpr>(e);
    SVal l = eval(*b.lhs);
    SVal r = eval(*b.rhs);
    return binary(b.op, std::move(l), std::move(r), b.getLoc());
  }
  case Expr::Kind::Unary: {
    const auto &u = llvm::cast<UnaryExpr>(e);
    SVal v = eval(*u.operand);
    switch (v.kind) {
    case SVal::Kind::Error:
      return v;
    case SVal::Kind::Int:
      if (!v.i.isKnown())
        return SVal::ofInt(Dim::symbol("(-" + v.i.sym + ")"));
      if (v.i.value == INT64_MIN) {
        error(u.getLoc(), "integer overflow in '-'");
        return SVal::error();
      }
      return SVal::ofInt(Dim::known(-v.i.value));
    case SVal::Kind::Float:
      return SVal::ofFloat(-v.f);
    case SVal::Kind::Tensor: {
      const TensorType &t = typeOf(v.tensor);
      if (!isFloat(t.dtype)) {
        error(u.getLoc(), "cannot negate an integer tensor " + t.str());
        return SVal::error();
      }
      return SVal::ofTensor(addNode(NodeOp::neg, {v.tensor}, t, u.getLoc()));
    }
    default:
      error(u.getLoc(), "cannot negate " + describe(v));
      return SVal::error();
    }
  }
  case Expr::Kind::List: {
    const auto &l = llvm::cast<ListExpr>(e);
    SVal v;
    v.kind = SVal::Kind::List;
    for (const ExprPtr &x : l.elems) {
      SVal item = eval(*x);
      if (item.isError())
        return item;
      v.list.push_back(std::move(item));
    }
    return v;
  }
  }
  return SVal::error();
}

//===----------------------------------------------------------------------===//
// Calls of defs
//===----------------------------------------------------------------------===//

SVal Sema::callDef(const DefDecl &def, const ModuleInfo &m,
                   const CallExpr &call) {
  if (callSites.size() >= kMaxCallDepth) {
    error(call.getLoc(),
          "calls nest more than " + std::to_string(kMaxCallDepth) + " deep");
    return SVal::error();
  }
  // Bind arguments to parameters by position, then by name.
  std::vector<const CallArg *> bound(def.params.size(), nullptr);
  size_t positional = 0;
  bool ok = true;
  for (const CallArg &arg : call.args) {
    if (arg.name.empty()) {
      if (positional >= def.params.size()) {
        error(arg.value->getLoc(), "too many arguments: '" + def.name +
                                       "' takes " +
                                       std::to_string(def.params.size()));
        note(def.nameLoc, "'" + def.name + "' is defined here");
        return SVal::error();
      }
      bound[positional++] = &arg;
      continue;
    }
    size_t idx = def.params.size();
    for (size_t i = 0; i < def.params.size(); ++i)
      if (def.params[i].name == arg.name)
        idx = i;
    if (idx == def.params.size()) {
      error(arg.nameLoc,
            "'" + def.name + "' has no parameter '" + arg.name + "'");
      note(def.nameLoc, "'" + def.name + "' is defined here");
      ok = false;
    } else if (bound[idx]) {
      error(arg.nameLoc, "argument '" + arg.name + "' is given twice");
      ok = false;
    } else {
      bound[idx] = &arg;
    }
  }
  for (size_t i = 0; i < def.params.size(); ++i)
    if (!bound[i]) {
      error(call.getLoc(), "missing argument '" + def.params[i].name +
                               "' in the call of '" + def.name + "'");
      note(def.nameLoc, "'" + def.name + "' is defined here");
      ok = false;
    }
  if (!ok)
    return SVal::error();

  Frame frame;
  frame.module = &m;
  frame.def = &def;

  // Check each argument against its declared type; dimension names in the
  // signature bind to the argument's extents (or must equal a constant of
  // the same name).
  std::map<std::string, Dim> dimsBound;
  std::optional<std::vector<Dim>> leading; // what `...` stands for
  auto unifyDims = [&](const TypeExpr &type, const TensorType &actual, Loc loc,
                       const std::string &what) {
    bool ellipsis = !type.dims.empty() && type.dims[0].isEllipsis();
    size_t fixed = type.dims.size() - (ellipsis ? 1 : 0);
    if (ellipsis ? actual.rank() < fixed : actual.rank() != fixed) {
      error(loc, what + " should have rank " + (ellipsis ? "at least " : "") +
                     std::to_string(fixed) + " but is " + actual.str());
      return false;
    }
    size_t lead = actual.rank() - fixed;
    if (ellipsis) {
      std::vector<Dim> mine(actual.dims.begin(), actual.dims.begin() + lead);
      if (leading && *leading != mine) {
        error(loc, what + " has leading dimensions that differ from those "
                          "'...' matched before");
        return false;
      }
      leading = mine;
    }
    for (size_t d = 0; d < fixed; ++d) {
      const DimExpr &de = type.dims[d + (ellipsis ? 1 : 0)];
      size_t at = lead + d;
      Dim expect;
      if (!de.isName()) {
        expect = Dim::known(de.value);
      } else if (auto it = dimsBound.find(de.name); it != dimsBound.end()) {
        expect = it->second;
      } else if (auto c = m.constValues.find(de.name);
                 c != m.constValues.end() &&
                 c->second.kind == SVal::Kind::Int) {
        expect = c->second.i;
      } else {
        dimsBound[de.name] = actual.dims[at];
        continue;
      }
      if (expect != actual.dims[at]) {
        error(loc, what + " has extent " + actual.dims[at].str() +
                       " in dimension " + std::to_string(at) + " where '" +
                       def.name + "' expects " +
                       (de.isName() ? de.name + " = " : "") + expect.str());
        return false;
      }
    }
    return true;
  };

  for (size_t i = 0; i < def.params.size(); ++i) {
    const Param &p = def.params[i];
    const CallArg &arg = *bound[i];
    SVal v = eval(*arg.value);
    if (v.isError())
      return v;
    Loc loc = arg.value->getLoc();
    std::string what = "argument '" + p.name + "' of '" + def.name + "'";
    switch (p.type.kind) {
    case TypeExpr::Kind::Tensor: {
      if (v.kind != SVal::Kind::Tensor) {
        error(loc, what + " must be a tensor " + "(" + p.type.dtype +
                       "[...]), got " + describe(v));
        return SVal::error();
      }
      const TensorType &t = typeOf(v.tensor);
      if (dtypeName(t.dtype) != p.type.dtype) {
        error(loc,
              what + " must have dtype " + p.type.dtype + ", got " + t.str());
        return SVal::error();
      }
      if (!unifyDims(p.type, t, loc, what))
        return SVal::error();
      break;
    }
    case TypeExpr::Kind::Float:
      if (v.kind == SVal::Kind::Int && v.i.isKnown())
        v = SVal::ofFloat(static_cast<double>(v.i.value));
      [[fallthrough]];
    case TypeExpr::Kind::Int:
    case TypeExpr::Kind::Bool:
    case TypeExpr::Kind::Str: {
      static const std::map<TypeExpr::Kind, std::pair<SVal::Kind, const char *>>
          scalars = {{TypeExpr::Kind::Int, {SVal::Kind::Int, "an int"}},
                     {TypeExpr::Kind::Float, {SVal::Kind::Float, "a float"}},
                     {TypeExpr::Kind::Bool, {SVal::Kind::Bool, "a bool"}},
                     {TypeExpr::Kind::Str, {SVal::Kind::Str, "a str"}}};
      const auto &[kind, name] = scalars.at(p.type.kind);
      if (v.kind != kind) {
        error(loc, what + " must be " + name + ", got " + describe(v));
        return SVal::error();
      }
      break;
    }
    }
    frame.locals[p.name] = std::move(v);
  }
  for (const auto &kv : dimsBound)
    if (!frame.locals.count(kv.first))
      frame.locals[kv.first] = SVal::ofInt(kv.second);
  // A result type may name int parameters: `-> f32[..., out]`.
  for (const Param &p : def.params)
    if (p.type.kind == TypeExpr::Kind::Int && !dimsBound.count(p.name))
      dimsBound[p.name] = frame.locals[p.name].i;

  // Numbered after the arguments ran, so in `linear(gelu(linear(x)))` the
  // inner call, which runs first, is linear_0.
  Frame &caller = frames.back();
  frame.path = caller.path + "/" + def.name + "_" +
               std::to_string(caller.callCount[def.name]++);
  callSites.push_back(call.getLoc());
  frames.push_back(std::move(frame));
  execBlock(def.body);
  Frame done = std::move(frames.back());
  frames.pop_back();

  SVal result = done.returned ? done.result : SVal::none();
  if (def.result && !result.isError()) {
    if (def.result->kind == TypeExpr::Kind::Tensor) {
      if (result.kind != SVal::Kind::Tensor) {
        error(def.result->loc, "'" + def.name +
                                   "' declares a tensor result but "
                                   "returns " +
                                   describe(result));
        result = SVal::error();
      } else {
        const TensorType &t = typeOf(result.tensor);
        std::string what = "the result of '" + def.name + "'";
        if (dtypeName(t.dtype) != def.result->dtype) {
          error(def.result->loc, what + " is " + t.str() + ", not " +
                                     def.result->dtype + "[...]");
          result = SVal::error();
        } else if (!unifyDims(*def.result, t, def.result->loc, what)) {
          result = SVal::error();
        }
      }
    }
  }
  callSites.pop_back();
  return result;
}

//===----------------------------------------------------------------------===//
// Operators
//===----------------------------------------------------------------------===//

static std::string opName(char op) { return std::string("'") + op + "'"; }

SVal Sema::binary(char op, SVal l, SVal r, Loc loc) {
  if (l.isError() || r.isError())
    return SVal::error();
  bool lNum = l.kind == SVal::Kind::Int || l.kind == SVal::Kind::Float;
  bool rNum = r.kind == SVal::Kind::Int || r.kind == SVal::Kind::Float;

  // Compile-time arithmetic.
  if (lNum && rNum) {
    if (op == '@') {
      error(loc, "'@' multiplies tensors, not numbers");
      return SVal::error();
    }
    if (l.kind == SVal::Kind::Int && r.kind == SVal::Kind::Int) {
      if (!l.i.isKnown() || !r.i.isKnown())
        return SVal::ofInt(Dim::symbol("(" + l.i.str() + op + r.i.str() + ")"));
      int64_t a = l.i.value, b = r.i.value, out = 0;
      bool overflow = false;
      switch (op) {
      case '+':
        overflow = __builtin_add_overflow(a, b, &out);
        break;
      case '-':
        overflow = __builtin_sub_overflow(a, b, &out);
        break;
      case '*':
        overflow = __builtin_mul_overflow(a, b, &out);
        break;
      case '/':
        if (b == 0) {
          error(loc, "division by zero");
          return SVal::error();
        }
        // INT64_MIN / -1 overflows (and traps in hardware, as does its
        // remainder), so it is refused before either is computed.
        if (a == INT64_MIN && b == -1) {
          error(loc, "integer overflow in '/'");
          return SVal::error();
        }
        if (a % b == 0)
          return SVal::ofInt(Dim{a / b, {}});
        return SVal::ofFloat(static_cast<double>(a) / static_cast<double>(b));
      }
      if (overflow) {
        error(loc, "integer overflow in " + opName(op));
        return SVal::error();
      }
      SVal v = SVal::ofInt(Dim{out, {}});
      return v;
    }
    if ((l.kind == SVal::Kind::Int && !l.i.isKnown()) ||
        (r.kind == SVal::Kind::Int && !r.i.isKnown())) {
      error(loc, "cannot mix a symbolic dimension with a fractional number");
      return SVal::error();
    }
    double a = l.kind == SVal::Kind::Int ? l.i.value : l.f;
    double b = r.kind == SVal::Kind::Int ? r.i.value : r.f;
    switch (op) {
    case '+':
      return SVal::ofFloat(a + b);
    case '-':
      return SVal::ofFloat(a - b);
    case '*':
      return SVal::ofFloat(a * b);
    default:
      if (b == 0) {
        error(loc, "division by zero");
        return SVal::error();
      }
      return SVal::ofFloat(a / b);
    }
  }

  bool lT = l.kind == SVal::Kind::Tensor, rT = r.kind == SVal::Kind::Tensor;
  if ((lT && (rT || rNum)) || (rT && lNum)) {
    if (op == '@') {
      if (!lT || !rT) {
        error(loc, "'@' needs a tensor on both sides, got " + describe(l) +
                       " and " + describe(r));
        return SVal::error();
      }
      return emitMatmul(l.tensor, r.tensor, false, false, loc);
    }
    // A number on one side becomes a rank-0 constant of the tensor's dtype.
    auto scalarFor = [&](const SVal &num, int other) -> int {
      DType dt = typeOf(other).dtype;
      if (num.kind == SVal::Kind::Int && !num.i.isKnown()) {
        error(loc, "cannot use the symbolic dimension '" + num.i.sym +
                       "' as a number in tensor arithmetic");
        return -1;
      }
      double value = num.kind == SVal::Kind::Int ? num.i.value : num.f;
      if (!isFloat(dt) && num.kind == SVal::Kind::Float) {
        error(loc, "cannot combine the integer tensor " + typeOf(other).str() +
                       " with a fractional number");
        return -1;
      }
      return constantLike(value, dt, loc);
    };
    int a = lT ? l.tensor : scalarFor(l, r.tensor);
    int b = rT ? r.tensor : scalarFor(r, l.tensor);
    if (a < 0 || b < 0)
      return SVal::error();
    return emitElementwise(op, a, b, loc);
  }
  error(loc, "operator " + opName(op) + " does not apply to " + describe(l) +
                 " and " + describe(r));
  return SVal::error();
}

} // namespace whale::lang
