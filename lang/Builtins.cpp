//===- Builtins.cpp - tensor functions and their shape rules --------------===//

#include "lang/SemaImpl.h"
#include "lang/Suggest.h"
#include "support/ConvMath.h"
#include "support/Limits.h"

#include <algorithm>
#include <cmath>

namespace whale::lang {

bool Sema::bindArgs(const std::string &fn, const CallExpr &call,
                    const std::vector<std::string> &params, size_t required,
                    std::vector<BoundArg> &out) {
  out.assign(params.size(), BoundArg{});
  size_t positional = 0;
  bool ok = true;
  for (const CallArg &arg : call.args) {
    size_t idx;
    if (arg.name.empty()) {
      idx = positional++;
      if (idx >= params.size()) {
        error(arg.value->getLoc(), "too many arguments: '" + fn +
                                       "' takes at most " +
                                       std::to_string(params.size()));
        return false;
      }
    } else {
      auto it = std::find(params.begin(), params.end(), arg.name);
      if (it == params.end()) {
        std::string msg = "'" + fn + "' has no argument '" + arg.name + "'";
        std::string best = closestMatch(arg.name, params);
        if (!best.empty())
          msg += "; did you mean '" + best + "'?";
        else {
          msg += "; its arguments are:";
          for (const std::string &p : params)
            msg += " " + p;
        }
        error(arg.nameLoc, msg);
        ok = false;
        continue;
      }
      idx = it - params.begin();
      if (out[idx].present) {
        error(arg.nameLoc, "argument '" + arg.name + "' is given twice");
        ok = false;
        continue;
      }
    }
    out[idx].present = true;
    out[idx].loc = arg.value->getLoc();
    out[idx].value = eval(*arg.value);
    if (out[idx].value.isError())
      ok = false;
  }
  for (size_t i = 0; i < required; ++i)
    if (!out[i].present) {
      error(call.getLoc(), "'" + fn + "' needs argument '" + params[i] + "'");
      ok = false;
    }
  return ok;
}

//===----------------------------------------------------------------------===//
// Shared shape rules
//===----------------------------------------------------------------------===//

SVal Sema::emitMatmul(int a, int b, bool transA, bool transB, Loc loc) {
  const TensorType ta = typeOf(a), tb = typeOf(b);
  if (!isFloat(ta.dtype) || ta.dtype != tb.dtype) {
    error(loc, "matrix product needs two floating-point tensors of one dtype, "
               "got " +
                   ta.str() + " and " + tb.str());
    return SVal::error();
  }
  if (ta.rank() < 2 || tb.rank() < 2) {
    error(loc, "matrix product needs operands of rank >= 2, got " + ta.str() +
                   " and " + tb.str());
    return SVal::error();
  }
  size_t ra = ta.rank(), rb = tb.rank();
  Dim m = transA ? ta.dims[ra - 1] : ta.dims[ra - 2];
  Dim ka = transA ? ta.dims[ra - 2] : ta.dims[ra - 1];
  Dim kb = transB ? tb.dims[rb - 1] : tb.dims[rb - 2];
  Dim n = transB ? tb.dims[rb - 2] : tb.dims[rb - 1];
  if (ka != kb) {
    error(loc, "shapes " + ta.str() + " and " + tb.str() +
                   " do not fit a matrix product: the contracting dimensions "
                   "are " +
                   ka.str() + " and " + kb.str());
    return SVal::error();
  }
  std::vector<Dim> batchA(ta.dims.begin(), ta.dims.end() - 2);
  std::vector<Dim> batchB(tb.dims.begin(), tb.dims.end() - 2);
  if (!batchB.empty() && batchA != batchB) {
    error(loc, "batched matrix product needs equal batch dimensions, got " +
                   ta.str() + " and " + tb.str());
    return SVal::error();
  }
  TensorType out{ta.dtype, batchA};
  out.dims.push_back(m);
  out.dims.push_back(n);
  std::vector<std::pair<std::string, NodeAttr>> attrs;
  if (transA)
    attrs.push_back({"transpose_lhs", NodeAttr(true)});
  if (transB)
    attrs.push_back({"transpose_rhs", NodeAttr(true)});
  return SVal::ofTensor(
      addNode(NodeOp::matmul, {a, b}, out, loc, std::move(attrs)));
}

SVal Sema::emitElementwise(char op, int a, int b, Loc loc) {
  const TensorType ta = typeOf(a), tb = typeOf(b);
  if (ta.dtype != tb.dtype) {
    error(loc, std::string("dtype mismatch in '") + op + "': " + ta.str() +
                   " and " + tb.str());
    return SVal::error();
  }
  std::optional<std::vector<Dim>> dims = broadcastDims(ta.dims, tb.dims);
  if (!dims) {
    error(loc, "shapes " + ta.str() + " and " + tb.str() +
                   " do not broadcast for '" + op + "'");
    return SVal::error();
  }
  const NodeOp name = op == '+'   ? NodeOp::add
                      : op == '-' ? NodeOp::sub
                      : op == '*' ? NodeOp::mul
                                  : NodeOp::div;
  return SVal::ofTensor(
      addNode(name, {a, b}, TensorType{ta.dtype, *dims}, loc));
}

//===----------------------------------------------------------------------===//
// The builtins
//===----------------------------------------------------------------------===//

namespace {

/// Argument helpers: each reports its own error and returns false.
struct Args {
  Sema &sema;
  const std::string &fn;
  const std::vector<std::string> &names;
  std::vector<BoundArg> &args;

  std::string what(size_t i) const {
    return "argument '" + names[i] + "' of '" + fn + "'";
  }
  bool tensor(size_t i, int &out, bool needFloat = true) {
    const SVal &v = args[i].value;
    if (v.kind != SVal::Kind::Tensor) {
      sema.error(args[i].loc,
                 what(i) + " must be a tensor, got " + describe(v));
      return false;
    }
    if (needFloat && !isFloat(sema.typeOf(v.tensor).dtype)) {
      sema.error(args[i].loc, what(i) +
                                  " must be a floating-point tensor, got " +
                                  sema.typeOf(v.tensor).str());
      return false;
    }
    out = v.tensor;
    return true;
  }
  bool integer(size_t i, int64_t &out, int64_t dflt) {
    if (!args[i].present) {
      out = dflt;
      return true;
    }
    std::optional<int64_t> v =
        sema.knownInt(args[i].value, args[i].loc, what(i).c_str());
    out = v.value_or(0);
    return v.has_value();
  }
  bool flag(size_t i, bool &out) {
    if (!args[i].present) {
      out = false;
      return true;
    }
    if (args[i].value.kind != SVal::Kind::Bool) {
      sema.error(args[i].loc, what(i) + " must be true or false, got " +
                                  describe(args[i].value));
      return false;
    }
    out = args[i].value.b;
    return true;
  }
  bool number(size_t i, double &out, double dflt) {
    if (!args[i].present) {
      out = dflt;
      return true;
    }
    const SVal &v = args[i].value;
    if (v.kind == SVal::Kind::Float) {
      out = v.f;
      return true;
    }
    if (v.kind == SVal::Kind::Int && v.i.isKnown()) {
      out = static_cast<double>(v.i.value);
      return true;
    }
    sema.error(args[i].loc, what(i) + " must be a number, got " + describe(v));
    return false;
  }
  /// A [height, width] pair: one integer for both, or a list of two; each
  /// at least `least`.
  bool pair(size_t i, std::vector<int64_t> &out, std::vector<int64_t> dflt,
            int64_t least) {
    out = std::move(dflt);
    if (!args[i].present)
      return true;
    const SVal &v = args[i].value;
    std::vector<const SVal *> items;
    if (v.kind == SVal::Kind::List && v.list.size() == 2)
      items = {&v.list[0], &v.list[1]};
    else if (v.kind == SVal::Kind::Int)
      items = {&v, &v};
    std::string want = what(i) + " must be an integer or a list of two, each " +
                       (least > 0 ? "at least " + std::to_string(least)
                                  : std::string("non-negative"));
    if (items.empty()) {
      sema.error(args[i].loc,
                 want + ", got " +
                     (v.kind == SVal::Kind::List
                          ? "a list of " + std::to_string(v.list.size())
                          : describe(v)));
      return false;
    }
    for (int k = 0; k < 2; ++k) {
      std::optional<int64_t> n =
          sema.knownInt(*items[k], args[i].loc, what(i).c_str());
      if (!n)
        return false;
      if (*n < least) {
        sema.error(args[i].loc, want + ", got " + std::to_string(*n));
        return false;
      }
      out[k] = *n;
    }
    return true;
  }
  /// Maps an axis (negative counts from the end) into [0, rank).
  bool axis(size_t i, int64_t rank, int64_t &out, int64_t dflt) {
    int64_t a;
    if (!integer(i, a, dflt))
      return false;
    int64_t n = a < 0 ? a + rank : a;
    if (n < 0 || n >= rank) {
      sema.error(args[i].present ? args[i].loc : args[0].loc,
                 "axis " + std::to_string(a) + " is out of range for rank " +
                     std::to_string(rank));
      return false;
    }
    out = n;
    return true;
  }
};

std::vector<double> initArgs(const Setting &s) {
  const std::string &kind = s.get("kind")->s;
  auto num = [&](const char *k) { return s.get(k)->f; };
  if (kind == "normal")
    return {num("mean"), num("std")};
  if (kind == "uniform")
    return {num("low"), num("high")};
  if (kind == "xavier")
    return {num("gain")};
  return {};
}

/// One call of a builtin: its arguments, bound to the names its table row
/// gives, and where it was written. Each rule, a member, checks the
/// arguments, computes the result's shape and adds the node.
struct BuiltinCall {
  Sema &s;
  const std::string &fn;
  std::vector<BoundArg> &args;
  Args a;
  Loc loc;
  /// The variable the result is assigned to (a parameter's name).
  std::string hint;
  /// The op of an elementwise builtin (its table row's).
  NodeOp op;

  SVal tensorOut(NodeOp op, std::vector<int> operands, TensorType t,
                 std::vector<std::pair<std::string, NodeAttr>> attrs = {}) {
    return SVal::ofTensor(s.addNode(op, std::move(operands), std::move(t), loc,
                                    std::move(attrs)));
  }

  SVal param();
  SVal matmul();
  SVal unary();
  SVal topk();
  SVal dropout();
  SVal oneHot();
  SVal moe();
  SVal conv2d();
  SVal pool2d();
  SVal causalMask();
  SVal softmax();
  SVal layernorm();
  SVal rmsNorm();
  SVal rope();
  SVal attention();
  SVal batchNorm();
  SVal embedding();
  SVal crossEntropy();
  SVal reduce();
  SVal reshape();
  SVal transposeOrPermute();
  SVal slice();
  SVal concat();
  SVal dim();
};

/// A builtin: its name, its arguments in order (the first `required` must
/// be given), and the rule that makes its node.
struct BuiltinSig {
  const char *name;
  std::vector<std::string> params;
  size_t required;
  SVal (BuiltinCall::*rule)();
  /// The op an elementwise builtin makes (BuiltinCall::unary).
  NodeOp op = NodeOp::constant;
};

/// Every builtin, a row each; the elementwise ones come from
/// lang/NodeOps.def, where a new elementwise op is one row.
const std::vector<BuiltinSig> &builtinTable() {
  static const std::vector<BuiltinSig> table = {
      {"param",
       {"shape", "init", "dtype", "trainable"},
       1,
       &BuiltinCall::param},
      {"matmul",
       {"a", "b", "transpose_a", "transpose_b"},
       2,
       &BuiltinCall::matmul},
  // Elementwise ops of one tensor, each a row of lang/NodeOps.def.
#define WHALE_ELEMENTWISE_BUILTIN(Enumerator, Mnemonic, OpClass)               \
  {Mnemonic, {"x"}, 1, &BuiltinCall::unary, NodeOp::Enumerator},
#include "lang/NodeOps.def"
      {"softmax", {"x", "axis"}, 1, &BuiltinCall::softmax},
      {"layernorm", {"x", "gamma", "beta", "eps"}, 3, &BuiltinCall::layernorm},
      {"rms_norm", {"x", "weight", "eps"}, 2, &BuiltinCall::rmsNorm},
      {"rope",
       {"x", "theta", "factor", "low_freq_factor", "high_freq_factor",
        "original_positions"},
       1,
       &BuiltinCall::rope},
      {"scaled_dot_product_attention",
       {"q", "k", "v", "causal", "scale"},
       3,
       &BuiltinCall::attention},
      {"batch_norm",
       {"x", "gamma", "beta", "running_mean", "running_var", "momentum", "eps"},
       5,
       &BuiltinCall::batchNorm},
      {"embedding", {"table", "ids"}, 2, &BuiltinCall::embedding},
      {"cross_entropy", {"logits", "labels"}, 2, &BuiltinCall::crossEntropy},
      {"sum", {"x", "axis", "keepdim"}, 1, &BuiltinCall::reduce},
      {"mean", {"x", "axis", "keepdim"}, 1, &BuiltinCall::reduce},
      {"max", {"x", "axis", "keepdim"}, 1, &BuiltinCall::reduce},
      {"reshape", {"x", "shape"}, 2, &BuiltinCall::reshape},
      {"transpose", {"x", "dim0", "dim1"}, 1, &BuiltinCall::transposeOrPermute},
      {"permute", {"x", "dims"}, 2, &BuiltinCall::transposeOrPermute},
      {"slice", {"x", "axis", "start", "end"}, 4, &BuiltinCall::slice},
      {"concat", {"tensors", "axis"}, 1, &BuiltinCall::concat},
      {"causal_mask", {"x"}, 1, &BuiltinCall::causalMask},
      {"topk", {"x", "k"}, 2, &BuiltinCall::topk},
      {"topk_indices", {"x", "k"}, 2, &BuiltinCall::topk},
      {"one_hot", {"ids", "classes"}, 2, &BuiltinCall::oneHot},
      {"dropout", {"x", "rate"}, 2, &BuiltinCall::dropout},
      {"moe_dispatch",
       {"x", "experts", "num_experts", "capacity_factor"},
       3,
       &BuiltinCall::moe},
      {"moe_combine", {"y", "experts", "gates"}, 3, &BuiltinCall::moe},
      {"conv2d",
       {"x", "w", "stride", "padding", "dilation", "groups"},
       2,
       &BuiltinCall::conv2d},
      {"max_pool2d",
       {"x", "kernel", "stride", "padding"},
       2,
       &BuiltinCall::pool2d},
      {"avg_pool2d",
       {"x", "kernel", "stride", "padding"},
       2,
       &BuiltinCall::pool2d},
      {"dim", {"x", "axis"}, 2, &BuiltinCall::dim},
  };
  return table;
}

const BuiltinSig *findBuiltin(const std::string &name) {
  for (const BuiltinSig &s : builtinTable())
    if (name == s.name)
      return &s;
  return nullptr;
}

} // namespace

bool Sema::isBuiltin(const std::string &name) { return findBuiltin(name); }

const std::vector<std::string> &builtinNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const BuiltinSig &s : builtinTable())
      out.push_back(s.name);
    for (const std::string &s : Sema::settingCtorNames())
      out.push_back(s);
    return out;
  }();
  return names;
}

SVal Sema::callBuiltin(const std::string &fn, const CallExpr &call) {
  const BuiltinSig *sig = findBuiltin(fn);
  std::string hint = std::move(nameHint);
  nameHint.clear();
  std::vector<BoundArg> args;
  if (!bindArgs(fn, call, sig->params, sig->required, args))
    return SVal::error();
  BuiltinCall c{*this,         fn,
                args,          Args{*this, fn, sig->params, args},
                call.getLoc(), std::move(hint),
                sig->op};
  return (c.*sig->rule)();
}

namespace {

SVal BuiltinCall::param() {
  // Top-level constants and s.config values are computed before any model
  // exists; a parameter belongs to the model being built.
  if (!s.graph) {
    s.error(loc, "param() makes a model parameter; call it inside a def or "
                 "model body, not in a top-level constant or setting");
    return SVal::error();
  }
  const SVal &shape = args[0].value;
  if (shape.kind != SVal::Kind::List) {
    s.error(args[0].loc, "the shape of a parameter is a list of extents, such "
                         "as [D, 4 * D]; got " +
                             describe(shape));
    return SVal::error();
  }
  TensorType t;
  for (const SVal &e : shape.list) {
    if (e.kind != SVal::Kind::Int) {
      s.error(args[0].loc,
              "a parameter extent must be an integer, got " + describe(e));
      return SVal::error();
    }
    if (!e.i.isKnown()) {
      s.error(args[0].loc, "parameter shapes must be known at compile time, "
                           "but this one depends on '" +
                               e.i.sym + "'");
      return SVal::error();
    }
    if (e.i.value < 1) {
      s.error(args[0].loc, "a parameter extent must be at least 1, got " +
                               std::to_string(e.i.value));
      return SVal::error();
    }
    t.dims.push_back(e.i);
  }
  if (t.numElements().value_or(INT64_MAX) > kMaxTensorElements) {
    s.error(args[0].loc,
            "parameter " + t.str() + " has more than 2^40 elements");
    return SVal::error();
  }
  if (args[2].present) {
    std::optional<DType> dt;
    if (args[2].value.kind == SVal::Kind::Str)
      dt = parseDType(args[2].value.s);
    if (!dt || !isFloat(*dt)) {
      s.error(args[2].loc,
              "a parameter's dtype is \"f32\", \"bf16\" or \"f16\"");
      return SVal::error();
    }
    t.dtype = *dt;
  }
  Setting init;
  if (args[1].present) {
    const SVal &iv = args[1].value;
    if (iv.kind != SVal::Kind::Setting || iv.category != "init") {
      s.error(args[1].loc, "'init' takes an initializer (zeros(), ones(), "
                           "normal(std), uniform(low, high), xavier()), got " +
                               describe(iv));
      return SVal::error();
    }
    init = iv.setting;
  } else {
    // Matrices start Xavier-uniform, vectors (biases, norms) at zero.
    init.kind = Setting::Kind::Dict;
    init.dict = {{"kind", Setting::ofStr(t.rank() >= 2 ? "xavier" : "zeros")}};
    if (t.rank() >= 2)
      init.dict.push_back({"gain", Setting::ofFloat(1.0)});
  }
  if (init.get("kind")->s == "xavier" && t.rank() < 2) {
    s.error(args[1].loc, "xavier() needs a parameter of rank >= 2 (fan in and "
                         "fan out), got " +
                             t.str());
    return SVal::error();
  }
  // trainable = false: state no gradient trains (running statistics).
  bool trainable = true;
  if (args[3].present && !a.flag(3, trainable))
    return SVal::error();
  Sema::Frame &f = s.frames.back();
  std::string base = hint.empty() ? "param" : hint;
  int k = f.paramCount[base]++;
  std::string name = f.path + "/" + base + (k ? "_" + std::to_string(k) : "");
  return tensorOut(NodeOp::param, {}, t,
                   {{"name", NodeAttr(name)},
                    {"init", NodeAttr(init.get("kind")->s)},
                    {"init_args", NodeAttr(initArgs(init))},
                    {"frozen", NodeAttr(!trainable)}});
}

SVal BuiltinCall::matmul() {
  int x, y;
  bool ta, tb;
  if (!a.tensor(0, x) || !a.tensor(1, y) || !a.flag(2, ta) || !a.flag(3, tb))
    return SVal::error();
  return s.emitMatmul(x, y, ta, tb, loc);
}

SVal BuiltinCall::unary() {
  // On a number, exp/log/sqrt/tanh compute at compile time (scales such
  // as 1 / sqrt(head_dim)).
  const SVal &v = args[0].value;
  bool isNumber = v.kind == SVal::Kind::Float ||
                  (v.kind == SVal::Kind::Int && v.i.isKnown());
  const bool computable =
      fn == "exp" || fn == "log" || fn == "sqrt" || fn == "tanh";
  if (isNumber && computable) {
    double x =
        v.kind == SVal::Kind::Float ? v.f : static_cast<double>(v.i.value);
    if ((fn == "sqrt" && x < 0) || (fn == "log" && x <= 0)) {
      s.error(args[0].loc, fn + "() of " + std::to_string(x) + " is undefined");
      return SVal::error();
    }
    double r = fn == "sqrt"  ? std::sqrt(x)
               : fn == "log" ? std::log(x)
               : fn == "exp" ? std::exp(x)
                             : std::tanh(x);
    if (!std::isfinite(r)) {
      s.error(args[0].loc, fn + "() overflows");
      return SVal::error();
    }
    return SVal::ofFloat(r);
  }
  int x;
  if (!a.tensor(0, x))
    return SVal::error();
  return tensorOut(op, {x}, s.typeOf(x));
}

SVal BuiltinCall::topk() {
  int x;
  int64_t k;
  if (!a.tensor(0, x) || !a.integer(1, k, 1))
    return SVal::error();
  const TensorType &tx = s.typeOf(x);
  if (tx.rank() < 1 || !tx.dims.back().isKnown()) {
    s.error(args[0].loc,
            fn + " takes [..., N] with a known N, got " + tx.str());
    return SVal::error();
  }
  const int64_t n = tx.dims.back().value;
  if (k < 1 || k > n) {
    s.error(args[1].loc, "k must be from 1 to " + std::to_string(n) +
                             " (the last dimension of " + tx.str() + "), got " +
                             std::to_string(k));
    return SVal::error();
  }
  TensorType out = tx;
  out.dims.back() = Dim::known(k);
  std::vector<std::pair<std::string, NodeAttr>> attrs = {{"k", NodeAttr(k)}};
  if (fn == "topk_indices") {
    out.dtype = DType::I32;
    attrs.push_back({"indices", NodeAttr(true)});
  }
  return tensorOut(NodeOp::topk, {x}, out, attrs);
}

SVal BuiltinCall::dropout() {
  int x;
  double rate;
  if (!a.tensor(0, x) || !a.number(1, rate, 0.0))
    return SVal::error();
  if (s.typeOf(x).rank() < 1) {
    s.error(args[0].loc, "dropout takes the batch's rows in dimension 0, "
                         "got " +
                             s.typeOf(x).str());
    return SVal::error();
  }
  if (!(rate >= 0 && rate < 1)) {
    s.error(args[1].loc, "rate must be in [0, 1), got " + std::to_string(rate));
    return SVal::error();
  }
  // Its key names its place in the model, as a parameter's name does: the
  // same script gives the same keys, so every plan drops alike.
  Sema::Frame &f = s.frames.back();
  int k = f.paramCount["@dropout"]++;
  std::string where = f.path + "/dropout" + (k ? "_" + std::to_string(k) : "");
  uint64_t h = 1469598103934665603ULL; // FNV-1a
  for (unsigned char ch : where)
    h = (h ^ ch) * 1099511628211ULL;
  return tensorOut(NodeOp::dropout, {x}, s.typeOf(x),
      {{"rate", NodeAttr(rate)}, {"key", NodeAttr(static_cast<int64_t>(h))}});
}

SVal BuiltinCall::oneHot() {
  int ids;
  int64_t classes;
  if (!a.tensor(0, ids, /*needFloat=*/false) || !a.integer(1, classes, 1))
    return SVal::error();
  TensorType out = s.typeOf(ids);
  if (out.dtype != DType::I32) {
    s.error(args[0].loc, "one_hot takes i32 ids, got " + out.str());
    return SVal::error();
  }
  if (classes < 1) {
    s.error(args[1].loc,
            "one_hot needs at least one class, got " + std::to_string(classes));
    return SVal::error();
  }
  out.dtype = DType::F32;
  out.dims.push_back(Dim::known(classes));
  return tensorOut(NodeOp::one_hot, {ids}, out, {{"classes", NodeAttr(classes)}});
}

SVal BuiltinCall::moe() {
  int x, experts;
  if (!a.tensor(0, x) || !a.tensor(1, experts, /*needFloat=*/false))
    return SVal::error();
  const TensorType &tx = s.typeOf(x), &te = s.typeOf(experts);
  if (te.dtype != DType::I32 || te.rank() != 3 || !te.dims[2].isKnown()) {
    s.error(args[1].loc, "experts must be i32[G, S, k] (topk_indices of the "
                         "router's probabilities), got " +
                             te.str());
    return SVal::error();
  }
  const Dim groups = te.dims[0];
  const int64_t k = te.dims[2].value;
  if (fn == "moe_dispatch") {
    int64_t numExperts;
    double factor;
    if (!a.integer(2, numExperts, 1) || !a.number(3, factor, 1.0))
      return SVal::error();
    if (tx.rank() != 3 || tx.dims[0] != groups || tx.dims[1] != te.dims[1] ||
        !tx.dims[1].isKnown()) {
      s.error(args[0].loc, "moe_dispatch takes tokens [G, S, D] with a known "
                           "S, routed by experts " +
                               te.str() + ", got " + tx.str());
      return SVal::error();
    }
    if (numExperts < k) {
      s.error(args[2].loc, "each token chooses " + std::to_string(k) +
                               " experts, so num_experts must be at least " +
                               std::to_string(k) + ", got " +
                               std::to_string(numExperts));
      return SVal::error();
    }
    if (!(factor > 0) || factor > 1e6) {
      s.error(args[3].loc, "capacity_factor must be a positive number, got " +
                               std::to_string(factor));
      return SVal::error();
    }
    // Each expert's slots per group: its even share of the group's
    // choices times the factor, at least one, at most the group's tokens
    // (a token picks an expert once).
    const int64_t tokens = tx.dims[1].value;
    const double even =
        static_cast<double>(tokens) * static_cast<double>(k) / numExperts;
    const int64_t capacity = std::clamp<int64_t>(
        static_cast<int64_t>(std::ceil(factor * even - 1e-9)), 1, tokens);
    // Saturating: a product past 2^63 is refused as too large later.
    Dim rows = groups.isKnown()
                   ? Dim::known(saturatingMul(groups.value, capacity))
                   : Dim::symbol("(" + groups.sym + "*" +
                                 std::to_string(capacity) + ")");
    TensorType out{tx.dtype, {Dim::known(numExperts), rows, tx.dims[2]}};
    return tensorOut(NodeOp::moe_dispatch, {x, experts}, out,
                     {{"num_experts", NodeAttr(numExperts)},
                      {"capacity", NodeAttr(capacity)}});
  }
  int gates;
  if (!a.tensor(2, gates))
    return SVal::error();
  // The slots' rows are G * C: a multiple of the groups, or spelled as
  // moe_dispatch spells it when G is symbolic.
  auto groupsShare = [&](const Dim &rows) {
    if (groups.isKnown() && rows.isKnown())
      return groups.value > 0 && rows.value > 0 &&
             rows.value % groups.value == 0;
    return !groups.isKnown() && !rows.isKnown() &&
           rows.sym.rfind("(" + groups.sym + "*", 0) == 0;
  };
  if (tx.rank() != 3 || !tx.dims[0].isKnown() || tx.dims[0].value < k ||
      !groupsShare(tx.dims[1])) {
    s.error(args[0].loc, "moe_combine takes the experts' slots [E, G * C, D] "
                         "(from moe_dispatch), got " +
                             tx.str());
    return SVal::error();
  }
  if (!(s.typeOf(gates) == TensorType{tx.dtype, te.dims})) {
    s.error(args[2].loc,
            "gates must be " + TensorType{tx.dtype, te.dims}.str() +
                ", one weight per choice, got " + s.typeOf(gates).str());
    return SVal::error();
  }
  TensorType out{tx.dtype, {groups, te.dims[1], tx.dims[2]}};
  return tensorOut(NodeOp::moe_combine, {x, experts, gates}, out);
}

SVal BuiltinCall::conv2d() {
  int x, w;
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups;
  if (!a.tensor(0, x) || !a.tensor(1, w) || !a.pair(2, stride, {1, 1}, 1) ||
      !a.pair(3, padding, {0, 0}, 0) || !a.pair(4, dilation, {1, 1}, 1) ||
      !a.integer(5, groups, 1))
    return SVal::error();
  const TensorType &tx = s.typeOf(x), &tw = s.typeOf(w);
  auto known = [](const TensorType &t, size_t from) {
    for (size_t d = from; d < t.dims.size(); ++d)
      if (!t.dims[d].isKnown())
        return false;
    return true;
  };
  if (tx.rank() != 4 || !known(tx, 1)) {
    s.error(args[0].loc, "conv2d takes images [N, C, H, W] with known C, H "
                         "and W, got " +
                             tx.str());
    return SVal::error();
  }
  if (tw.rank() != 4 || !known(tw, 0)) {
    s.error(args[1].loc,
            "conv2d takes weights [O, C / groups, KH, KW], got " + tw.str());
    return SVal::error();
  }
  const int64_t c = tx.dims[1].value, o = tw.dims[0].value;
  if (groups < 1 || c % groups != 0 || o % groups != 0 ||
      tw.dims[1].value != c / groups) {
    s.error(args[1].loc, "weights " + tw.str() + " do not fit " +
                             std::to_string(c) + " input channels in " +
                             std::to_string(groups) +
                             " groups: they must be [O, " +
                             std::to_string(groups > 0 ? c / groups : c) +
                             ", KH, KW] with O a multiple of the groups");
    return SVal::error();
  }
  rt::Window2d win{tw.dims[2].value, tw.dims[3].value, stride[0],
                   stride[1],        padding[0],       padding[1],
                   dilation[0],      dilation[1]};
  if (!win.withinLimits()) {
    s.error(args[1].loc, "conv2d's kernel, stride, padding and dilation are "
                         "each at most 2^30");
    return SVal::error();
  }
  int64_t oh = win.outH(tx.dims[2].value), ow = win.outW(tx.dims[3].value);
  if (oh < 1 || ow < 1) {
    s.error(args[1].loc, "the kernel of " + tw.str() +
                             " does not fit the padded image of " + tx.str());
    return SVal::error();
  }
  TensorType out{tx.dtype,
                 {tx.dims[0], Dim::known(o), Dim::known(oh), Dim::known(ow)}};
  return tensorOut(NodeOp::conv2d, {x, w}, out,
                   {{"stride", NodeAttr(stride)},
                    {"padding", NodeAttr(padding)},
                    {"dilation", NodeAttr(dilation)},
                    {"groups", NodeAttr(groups)}});
}

SVal BuiltinCall::pool2d() {
  int x;
  std::vector<int64_t> kernel, stride, padding;
  if (!a.tensor(0, x) || !a.pair(1, kernel, {1, 1}, 1) ||
      !a.pair(2, stride, kernel, 1) || !a.pair(3, padding, {0, 0}, 0))
    return SVal::error();
  const TensorType &tx = s.typeOf(x);
  const int64_t r = tx.rank();
  if (r < 2 || !tx.dims[r - 2].isKnown() || !tx.dims[r - 1].isKnown()) {
    s.error(args[0].loc,
            fn + " takes [..., H, W] with known H and W, got " + tx.str());
    return SVal::error();
  }
  rt::Window2d win{kernel[0],  kernel[1],  stride[0], stride[1],
                   padding[0], padding[1], 1,         1};
  if (!win.withinLimits()) {
    s.error(args[1].loc, fn + "'s kernel, stride and padding are each at "
                              "most 2^30");
    return SVal::error();
  }
  if (2 * padding[0] > kernel[0] || 2 * padding[1] > kernel[1]) {
    s.error(args[3].loc, "padding is at most half the kernel");
    return SVal::error();
  }
  int64_t oh = win.outH(tx.dims[r - 2].value),
          ow = win.outW(tx.dims[r - 1].value);
  if (oh < 1 || ow < 1) {
    s.error(args[1].loc, "the window does not fit " + tx.str());
    return SVal::error();
  }
  TensorType out = tx;
  out.dims[r - 2] = Dim::known(oh);
  out.dims[r - 1] = Dim::known(ow);
  return tensorOut(NodeOp::pool2d, {x}, out,
      {{"kind", NodeAttr(std::string(fn == "max_pool2d" ? "max" : "avg"))},
       {"kernel", NodeAttr(kernel)},
       {"stride", NodeAttr(stride)},
       {"padding", NodeAttr(padding)}});
}

SVal BuiltinCall::causalMask() {
  int x;
  if (!a.tensor(0, x))
    return SVal::error();
  if (s.typeOf(x).rank() < 2) {
    s.error(args[0].loc, "causal_mask needs scores of rank >= 2 [..., T, S], "
                         "got " +
                             s.typeOf(x).str());
    return SVal::error();
  }
  return tensorOut(NodeOp::causal_mask, {x}, s.typeOf(x));
}

SVal BuiltinCall::softmax() {
  int x;
  int64_t axis;
  if (!a.tensor(0, x) || !a.axis(1, s.typeOf(x).rank(), axis, -1))
    return SVal::error();
  return tensorOut(NodeOp::softmax, {x}, s.typeOf(x), {{"axis", NodeAttr(axis)}});
}

SVal BuiltinCall::layernorm() {
  int x, g, b;
  double eps;
  if (!a.tensor(0, x) || !a.tensor(1, g) || !a.tensor(2, b) ||
      !a.number(3, eps, 1e-5))
    return SVal::error();
  const TensorType &tx = s.typeOf(x);
  if (tx.rank() < 1) {
    s.error(args[0].loc, "layernorm needs an input of rank >= 1");
    return SVal::error();
  }
  TensorType vec{tx.dtype, {tx.dims.back()}};
  for (int i : {1, 2})
    if (!(s.typeOf(i == 1 ? g : b) == vec)) {
      s.error(args[i].loc, a.what(i) + " must be " + vec.str() +
                               " to match the last dimension of " + tx.str() +
                               ", got " + s.typeOf(i == 1 ? g : b).str());
      return SVal::error();
    }
  if (eps <= 0) {
    s.error(args[3].loc, "eps must be positive");
    return SVal::error();
  }
  return tensorOut(NodeOp::layernorm, {x, g, b}, tx, {{"eps", NodeAttr(eps)}});
}

SVal BuiltinCall::rmsNorm() {
  int x, w;
  double eps;
  if (!a.tensor(0, x) || !a.tensor(1, w) || !a.number(2, eps, 1e-5))
    return SVal::error();
  const TensorType &tx = s.typeOf(x);
  if (tx.rank() < 1) {
    s.error(args[0].loc, "rms_norm needs an input of rank >= 1");
    return SVal::error();
  }
  TensorType vec{tx.dtype, {tx.dims.back()}};
  if (!(s.typeOf(w) == vec)) {
    s.error(args[1].loc, a.what(1) + " must be " + vec.str() +
                             " to match the last dimension of " + tx.str() +
                             ", got " + s.typeOf(w).str());
    return SVal::error();
  }
  if (eps <= 0) {
    s.error(args[2].loc, "eps must be positive");
    return SVal::error();
  }
  return tensorOut(NodeOp::rms_norm, {x, w}, tx, {{"eps", NodeAttr(eps)}});
}

SVal BuiltinCall::rope() {
  int x;
  double theta, factor, low, high, original;
  if (!a.tensor(0, x) || !a.number(1, theta, 10000.0) ||
      !a.number(2, factor, 1.0) || !a.number(3, low, 1.0) ||
      !a.number(4, high, 4.0) || !a.number(5, original, 8192.0))
    return SVal::error();
  const TensorType &tx = s.typeOf(x);
  if (tx.rank() < 2 ||
      (tx.dims.back().isKnown() && tx.dims.back().value % 2 != 0)) {
    s.error(args[0].loc,
            "rope needs [..., T, E] with an even E, got " + tx.str());
    return SVal::error();
  }
  if (!(theta > 1)) {
    s.error(args[1].loc, "theta must be greater than 1");
    return SVal::error();
  }
  // Llama 3.1's frequency scaling, where a factor above 1 asks for it.
  if (factor == 1)
    return tensorOut(NodeOp::rope, {x}, tx, {{"theta", NodeAttr(theta)}});
  if (!(factor > 1) || !(low > 0) || !(high > low) || !(original >= 1)) {
    s.error(args[2].loc, "rope's scaling needs factor >= 1, 0 < "
                         "low_freq_factor < high_freq_factor and "
                         "original_positions >= 1");
    return SVal::error();
  }
  return tensorOut(NodeOp::rope, {x}, tx,
                   {{"theta", NodeAttr(theta)},
                    {"scaling", NodeAttr(std::vector<double>{factor, low, high,
                                                             original})}});
}

// softmax(q k^T * scale) v over [..., T, E] heads, as one op whose kernel
// never holds the [..., T, S] scores. k and v may have fewer heads than q
// (grouped-query attention: the axis before T of k divides q's), each key
// head serving that many consecutive query heads, as transformers'
// repeat_kv lays them out.
SVal BuiltinCall::attention() {
  int q, k, v;
  bool causal;
  if (!a.tensor(0, q) || !a.tensor(1, k) || !a.tensor(2, v) ||
      !a.flag(3, causal))
    return SVal::error();
  const TensorType &tq = s.typeOf(q), &tk = s.typeOf(k), &tv = s.typeOf(v);
  const size_t r = tq.rank();
  if (r < 2 || tk.rank() != r || tk.dtype != tq.dtype) {
    s.error(args[1].loc, "scaled_dot_product_attention needs q [..., T, E] "
                         "and k [..., S, E] of "
                         "one rank >= 2 and one dtype, got q " +
                             tq.str() + " and k " + tk.str());
    return SVal::error();
  }
  if (!(tv == tk)) {
    s.error(args[2].loc, "v must be k's " + tk.str() + ", got " + tv.str());
    return SVal::error();
  }
  if (tk.dims[r - 1] != tq.dims[r - 1]) {
    s.error(args[1].loc, "k's width must be q's " + tq.dims[r - 1].str() +
                             ", got " + tk.str());
    return SVal::error();
  }
  for (size_t d = 0; d + 2 < r; ++d) {
    const Dim &qd = tq.dims[d], &kd = tk.dims[d];
    if (qd == kd)
      continue;
    const bool heads = d + 3 == r;
    if (heads && qd.isKnown() && kd.isKnown() && kd.value > 0 &&
        qd.value % kd.value == 0)
      continue;
    s.error(args[1].loc, heads ? "k's heads (" + kd.str() +
                                     ") must divide q's (" + qd.str() + ")"
                               : "k's leading dimensions must be q's: q " +
                                     tq.str() + ", k " + tk.str());
    return SVal::error();
  }
  if (causal && tk.dims[r - 2] != tq.dims[r - 2]) {
    s.error(args[3].loc, "a causal attention needs as many keys as queries: "
                         "q " +
                             tq.str() + ", k " + tk.str());
    return SVal::error();
  }
  double scale = 0;
  if (!args[4].present) {
    if (!tq.dims[r - 1].isKnown() || tq.dims[r - 1].value <= 0) {
      s.error(args[0].loc, "the default scale 1/sqrt(E) needs a "
                           "known width, got " +
                               tq.str());
      return SVal::error();
    }
    scale = 1 / std::sqrt(static_cast<double>(tq.dims[r - 1].value));
  } else if (!a.number(4, scale, 0)) {
    return SVal::error();
  }
  if (!(scale > 0) || !std::isfinite(scale)) {
    s.error(args[4].loc, "scale must be a positive number");
    return SVal::error();
  }
  return tensorOut(NodeOp::attention, {q, k, v}, tq,
                   {{"scale", NodeAttr(scale)}, {"causal", NodeAttr(causal)}});
}

SVal BuiltinCall::batchNorm() {
  int x, g, b, rm, rv;
  double momentum, eps;
  if (!a.tensor(0, x) || !a.tensor(1, g) || !a.tensor(2, b) ||
      !a.tensor(3, rm) || !a.tensor(4, rv) || !a.number(5, momentum, 0.1) ||
      !a.number(6, eps, 1e-5))
    return SVal::error();
  const TensorType &tx = s.typeOf(x);
  if (tx.rank() < 2) {
    s.error(args[0].loc, "batch_norm normalizes each channel of [N, C, ...] "
                         "(rank >= 2), got " +
                             tx.str());
    return SVal::error();
  }
  TensorType vec{tx.dtype, {tx.dims[1]}};
  for (int i = 1; i <= 4; ++i) {
    int v = i == 1 ? g : i == 2 ? b : i == 3 ? rm : rv;
    if (!(s.typeOf(v) == vec)) {
      s.error(args[i].loc, a.what(i) + " must be " + vec.str() +
                               " to match the channels of " + tx.str() +
                               ", got " + s.typeOf(v).str());
      return SVal::error();
    }
  }
  // The running statistics are updated in place: they must be state.
  for (int i : {3, 4}) {
    int v = i == 3 ? rm : rv;
    size_t inputs = s.graph->inputs.size();
    const Node *n = v >= static_cast<int>(inputs)
                        ? &s.graph->nodes[static_cast<size_t>(v) - inputs]
                        : nullptr;
    bool frozen = false;
    if (n && n->op == NodeOp::param)
      for (const auto &[k, attr] : n->attrs)
        if (k == "frozen")
          frozen = std::get<bool>(attr);
    if (!frozen) {
      s.error(args[i].loc, a.what(i) +
                               " must be a parameter made with trainable = "
                               "false (state the step updates, no gradient)");
      return SVal::error();
    }
  }
  if (!(momentum >= 0 && momentum <= 1)) {
    s.error(args[5].loc,
            "momentum must be in [0, 1], got " + std::to_string(momentum));
    return SVal::error();
  }
  if (!(eps > 0)) {
    s.error(args[6].loc, "eps must be positive");
    return SVal::error();
  }
  return tensorOut(NodeOp::batch_norm, {x, g, b, rm, rv}, tx,
                   {{"momentum", NodeAttr(momentum)}, {"eps", NodeAttr(eps)}});
}

SVal BuiltinCall::embedding() {
  int table, ids;
  if (!a.tensor(0, table) || !a.tensor(1, ids, /*needFloat=*/false))
    return SVal::error();
  const TensorType &tt = s.typeOf(table), &ti = s.typeOf(ids);
  if (tt.rank() != 2) {
    s.error(args[0].loc, "an embedding table is [vocab, dim], got " + tt.str());
    return SVal::error();
  }
  if (isFloat(ti.dtype)) {
    s.error(args[1].loc,
            "embedding ids must be integers (i32 or i64), got " + ti.str());
    return SVal::error();
  }
  TensorType out{tt.dtype, ti.dims};
  out.dims.push_back(tt.dims[1]);
  return tensorOut(NodeOp::embedding, {table, ids}, out);
}

SVal BuiltinCall::crossEntropy() {
  int logits, labels;
  if (!a.tensor(0, logits) || !a.tensor(1, labels, /*needFloat=*/false))
    return SVal::error();
  const TensorType &tl = s.typeOf(logits), &ty = s.typeOf(labels);
  if (isFloat(ty.dtype)) {
    s.error(args[1].loc,
            "labels must be integer class ids (i32 or i64), got " + ty.str());
    return SVal::error();
  }
  if (tl.rank() < 1 ||
      std::vector<Dim>(tl.dims.begin(), tl.dims.end() - 1) != ty.dims) {
    s.error(loc, "labels " + ty.str() + " do not match logits " + tl.str() +
                     ": labels have the logits' shape without the class "
                     "dimension");
    return SVal::error();
  }
  return tensorOut(NodeOp::cross_entropy, {logits, labels},
                   TensorType{tl.dtype, ty.dims});
}

SVal BuiltinCall::reduce() {
  int x;
  bool keepdim;
  if (!a.tensor(0, x) || !a.flag(2, keepdim))
    return SVal::error();
  const TensorType &tx = s.typeOf(x);
  int64_t rank = tx.rank();
  std::vector<int64_t> axes;
  if (!args[1].present) {
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  } else {
    std::vector<SVal> items = args[1].value.kind == SVal::Kind::List
                                  ? args[1].value.list
                                  : std::vector<SVal>{args[1].value};
    for (const SVal &item : items) {
      std::optional<int64_t> v = s.knownInt(item, args[1].loc, "an axis");
      if (!v)
        return SVal::error();
      int64_t n = *v < 0 ? *v + rank : *v;
      if (n < 0 || n >= rank) {
        s.error(args[1].loc, "axis " + std::to_string(*v) +
                                 " is out of range for rank " +
                                 std::to_string(rank));
        return SVal::error();
      }
      if (std::find(axes.begin(), axes.end(), n) != axes.end()) {
        s.error(args[1].loc, "axis " + std::to_string(*v) + " appears twice");
        return SVal::error();
      }
      axes.push_back(n);
    }
    std::sort(axes.begin(), axes.end());
  }
  TensorType out{tx.dtype, {}};
  for (int64_t i = 0; i < rank; ++i) {
    if (std::find(axes.begin(), axes.end(), i) == axes.end())
      out.dims.push_back(tx.dims[i]);
    else if (keepdim)
      out.dims.push_back(Dim::known(1));
  }
  std::vector<std::pair<std::string, NodeAttr>> attrs = {
      {"axes", NodeAttr(axes)}};
  if (keepdim)
    attrs.push_back({"keepdim", NodeAttr(true)});
  const NodeOp op = fn == "sum"    ? NodeOp::reduce_sum
                    : fn == "mean" ? NodeOp::reduce_mean
                                   : NodeOp::reduce_max;
  return tensorOut(op, {x}, out, std::move(attrs));
}

SVal BuiltinCall::reshape() {
  int x;
  if (!a.tensor(0, x, /*needFloat=*/false))
    return SVal::error();
  const TensorType &tx = s.typeOf(x);
  const SVal &shape = args[1].value;
  if (shape.kind != SVal::Kind::List || shape.list.empty()) {
    s.error(args[1].loc, "reshape takes a non-empty list of extents, got " +
                             describe(shape));
    return SVal::error();
  }
  // Known extents multiply; symbolic ones must match the input's symbols
  // one for one, so the element counts provably agree.
  std::vector<Dim> dims;
  int inferAt = -1;
  int64_t knownOut = 1;
  std::multiset<std::string> symsOut, symsIn;
  for (size_t i = 0; i < shape.list.size(); ++i) {
    const SVal &e = shape.list[i];
    if (e.kind != SVal::Kind::Int) {
      s.error(args[1].loc,
              "a reshape extent must be an integer, got " + describe(e));
      return SVal::error();
    }
    if (e.i.isKnown() && e.i.value == -1) {
      if (inferAt >= 0) {
        s.error(args[1].loc, "reshape can infer only one extent (-1)");
        return SVal::error();
      }
      inferAt = static_cast<int>(i);
      dims.push_back(Dim::known(1));
      continue;
    }
    if (e.i.isKnown()) {
      if (e.i.value < 1) {
        s.error(args[1].loc, "a reshape extent must be at least 1 (or -1 to "
                             "infer it), got " +
                                 std::to_string(e.i.value));
        return SVal::error();
      }
      if (__builtin_mul_overflow(knownOut, e.i.value, &knownOut)) {
        s.error(args[1].loc, "reshape extents overflow 64 bits");
        return SVal::error();
      }
    } else {
      symsOut.insert(e.i.sym);
    }
    dims.push_back(e.i);
  }
  int64_t knownIn = 1;
  for (const Dim &d : tx.dims) {
    if (d.isKnown())
      knownIn *= d.value;
    else
      symsIn.insert(d.sym);
  }
  if (symsIn != symsOut) {
    s.error(args[1].loc,
            "cannot reshape " + tx.str() +
                ": the symbolic extents must carry over unchanged");
    return SVal::error();
  }
  if (inferAt >= 0) {
    if (knownIn % knownOut != 0) {
      s.error(args[1].loc,
              "cannot reshape " + tx.str() + ": " + std::to_string(knownIn) +
                  " is not a multiple of " + std::to_string(knownOut));
      return SVal::error();
    }
    dims[inferAt] = Dim::known(knownIn / knownOut);
  } else if (knownIn != knownOut) {
    TensorType want{tx.dtype, dims};
    s.error(args[1].loc, "cannot reshape " + tx.str() + " into " + want.str() +
                             ": the element counts differ");
    return SVal::error();
  }
  return tensorOut(NodeOp::reshape, {x}, TensorType{tx.dtype, dims});
}

SVal BuiltinCall::transposeOrPermute() {
  int x;
  if (!a.tensor(0, x, /*needFloat=*/false))
    return SVal::error();
  const TensorType &tx = s.typeOf(x);
  int64_t rank = tx.rank();
  std::vector<int64_t> perm;
  if (fn == "transpose") {
    if (rank < 2) {
      s.error(args[0].loc, "transpose needs rank >= 2, got " + tx.str());
      return SVal::error();
    }
    int64_t d0, d1;
    if (!a.axis(1, rank, d0, -2) || !a.axis(2, rank, d1, -1))
      return SVal::error();
    for (int64_t i = 0; i < rank; ++i)
      perm.push_back(i);
    std::swap(perm[d0], perm[d1]);
  } else {
    const SVal &dims = args[1].value;
    if (dims.kind != SVal::Kind::List ||
        static_cast<int64_t>(dims.list.size()) != rank) {
      s.error(args[1].loc, "permute takes a list of " + std::to_string(rank) +
                               " axes for " + tx.str());
      return SVal::error();
    }
    std::vector<bool> seen(rank, false);
    for (const SVal &e : dims.list) {
      std::optional<int64_t> v = s.knownInt(e, args[1].loc, "an axis");
      if (!v)
        return SVal::error();
      int64_t n = *v < 0 ? *v + rank : *v;
      if (n < 0 || n >= rank || seen[n]) {
        s.error(args[1].loc,
                "permute needs each axis of " + tx.str() + " once");
        return SVal::error();
      }
      seen[n] = true;
      perm.push_back(n);
    }
  }
  TensorType out{tx.dtype, {}};
  for (int64_t p : perm)
    out.dims.push_back(tx.dims[p]);
  return tensorOut(NodeOp::transpose, {x}, out, {{"permutation", NodeAttr(perm)}});
}

SVal BuiltinCall::slice() {
  int x;
  if (!a.tensor(0, x, /*needFloat=*/false))
    return SVal::error();
  const TensorType &tx = s.typeOf(x);
  int64_t axis, start, end;
  if (tx.rank() < 1) {
    s.error(args[0].loc, "cannot slice a rank-0 tensor");
    return SVal::error();
  }
  if (!a.axis(1, tx.rank(), axis, 0) || !a.integer(2, start, 0) ||
      !a.integer(3, end, 0))
    return SVal::error();
  const Dim &extent = tx.dims[axis];
  if (!extent.isKnown()) {
    s.error(args[1].loc,
            "cannot slice along the symbolic dimension '" + extent.sym + "'");
    return SVal::error();
  }
  if (start < 0)
    start += extent.value;
  if (end < 0)
    end += extent.value;
  if (start < 0 || start >= end || end > extent.value) {
    s.error(loc, "slice [" + std::to_string(start) + ", " +
                     std::to_string(end) + ") is empty or outside [0, " +
                     std::to_string(extent.value) + ") of " + tx.str());
    return SVal::error();
  }
  TensorType out = tx;
  out.dims[axis] = Dim::known(end - start);
  return tensorOut(NodeOp::slice, {x}, out,
                   {{"axis", NodeAttr(axis)},
                    {"start", NodeAttr(start)},
                    {"end", NodeAttr(end)}});
}

SVal BuiltinCall::concat() {
  const SVal &list = args[0].value;
  if (list.kind != SVal::Kind::List || list.list.empty()) {
    s.error(args[0].loc,
            "concat takes a non-empty list of tensors, got " + describe(list));
    return SVal::error();
  }
  std::vector<int> ids;
  for (const SVal &e : list.list) {
    if (e.kind != SVal::Kind::Tensor) {
      s.error(args[0].loc, "concat takes tensors, got " + describe(e));
      return SVal::error();
    }
    ids.push_back(e.tensor);
  }
  TensorType out = s.typeOf(ids[0]);
  if (out.rank() < 1) {
    s.error(args[0].loc, "cannot concatenate rank-0 tensors");
    return SVal::error();
  }
  int64_t axis;
  if (!a.axis(1, out.rank(), axis, 0))
    return SVal::error();
  int64_t total = 0;
  for (int id : ids) {
    const TensorType &t = s.typeOf(id);
    bool fits = t.dtype == out.dtype && t.rank() == out.rank();
    for (size_t d = 0; fits && d < t.rank(); ++d)
      fits = static_cast<int64_t>(d) == axis || t.dims[d] == out.dims[d];
    if (!fits || !t.dims[axis].isKnown()) {
      s.error(args[0].loc, "cannot concatenate " + t.str() + " with " +
                               s.typeOf(ids[0]).str() + " along axis " +
                               std::to_string(axis));
      return SVal::error();
    }
    total += t.dims[axis].value;
  }
  out.dims[axis] = Dim::known(total);
  return tensorOut(NodeOp::concat, ids, out, {{"axis", NodeAttr(axis)}});
}

SVal BuiltinCall::dim() {
  int x;
  int64_t axis;
  if (!a.tensor(0, x, /*needFloat=*/false) ||
      !a.axis(1, s.typeOf(x).rank(), axis, 0))
    return SVal::error();
  return SVal::ofInt(s.typeOf(x).dims[axis]);
}

} // namespace

} // namespace whale::lang
