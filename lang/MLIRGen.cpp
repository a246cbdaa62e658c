//===- MLIRGen.cpp - a checked Program to the whale dialect ---------------===//

#include "lang/MLIRGen.h"

#include "support/Limits.h"

#include "dialects/Whale/IR/WhaleOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include <set>

using namespace mlir;

namespace whale::lang {
namespace {

class Generator {
public:
  Generator(MLIRContext &ctx, const SourceManager &sources,
            DiagnosticEngine &diags)
      : ctx(ctx), b(&ctx), sources(sources), diags(diags) {}

  OwningOpRef<ModuleOp> run(const Program &program) {
    OwningOpRef<ModuleOp> module = ModuleOp::create(b.getUnknownLoc());
    if (!program.config.empty()) {
      // The front end checked every key and value: a refusal here is a bug
      // in Whale, which the verifier below reports as such (the dictionary
      // is not a #whale.settings).
      DictionaryAttr dict = settingsAttr(program.config);
      SettingsAttr config;
      {
        ScopedDiagnosticHandler quiet(&ctx,
                                      [](mlir::Diagnostic &) { return success(); });
        config = SettingsAttr::fromDictionary(
            dict, [&] { return mlir::emitError(b.getUnknownLoc()); });
      }
      (*module)->setAttr("whale.config",
                         config ? Attribute(config) : Attribute(dict));
    }
    b.setInsertionPointToEnd(module->getBody());
    for (const ModelGraph &g : program.models)
      if (!model(g))
        return nullptr;

    // The front end checked every rule already; a verifier error here is a
    // bug in Whale, reported as such rather than crashing.
    std::string message;
    {
      ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
        if (message.empty())
          message = d.str();
        return success();
      });
      if (failed(verify(*module))) {
        diags.error(Loc{}, "internal error: the generated whale IR does not "
                           "verify: " +
                               message);
        return nullptr;
      }
    }
    return module;
  }

private:
  Location loc(Loc l) {
    if (!l.valid() || l.file >= sources.size())
      return b.getUnknownLoc();
    return FileLineColLoc::get(&ctx, sources.path(l.file), l.line, l.col);
  }

  Type elementType(DType d) {
    switch (d) {
    case DType::F32:
      return b.getF32Type();
    case DType::F16:
      return b.getF16Type();
    case DType::BF16:
      return b.getBF16Type();
    case DType::I32:
      return b.getI32Type();
    case DType::I64:
      return b.getI64Type();
    }
    return b.getF32Type();
  }

  RankedTensorType tensorType(const TensorType &t) {
    SmallVector<int64_t> shape;
    for (const Dim &d : t.dims)
      shape.push_back(d.value);
    return RankedTensorType::get(shape, elementType(t.dtype));
  }

  Attribute settingAttr(const Setting &s) {
    switch (s.kind) {
    case Setting::Kind::Int:
      return b.getI64IntegerAttr(s.i);
    case Setting::Kind::Float:
      return b.getF64FloatAttr(s.f);
    case Setting::Kind::Bool:
      return b.getBoolAttr(s.b);
    case Setting::Kind::Str:
      return b.getStringAttr(s.s);
    case Setting::Kind::Dict:
      return settingsAttr(s.dict);
    }
    return {};
  }

  DictionaryAttr settingsAttr(const Settings &settings) {
    SmallVector<NamedAttribute> entries;
    for (const auto &kv : settings)
      entries.push_back(b.getNamedAttr(kv.first, settingAttr(kv.second)));
    return b.getDictionaryAttr(entries);
  }

  void addAttr(OperationState &state, const std::string &name,
               const NodeAttr &a) {
    if (name == "init") {
      std::optional<InitKind> kind =
          symbolizeInitKind(std::get<std::string>(a));
      state.addAttribute(name, InitKindAttr::get(&ctx, *kind));
      return;
    }
    std::visit(
        [&](const auto &v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, int64_t>)
            state.addAttribute(name, b.getI64IntegerAttr(v));
          else if constexpr (std::is_same_v<T, double>)
            state.addAttribute(name, b.getF64FloatAttr(v));
          else if constexpr (std::is_same_v<T, bool>) {
            if (v)
              state.addAttribute(name, b.getUnitAttr());
          } else if constexpr (std::is_same_v<T, std::string>)
            state.addAttribute(name, b.getStringAttr(v));
          else if constexpr (std::is_same_v<T, std::vector<int64_t>>)
            state.addAttribute(name, b.getDenseI64ArrayAttr(v));
          else
            state.addAttribute(name, b.getDenseF64ArrayAttr(v));
        },
        a);
  }

  /// The op class's name for `op`: each row of lang/NodeOps.def names a
  /// class of the dialect.
  static llvm::StringRef opName(NodeOp op) {
    switch (op) {
#define WHALE_NODE_OP(Enumerator, Mnemonic, OpClass)                           \
  case NodeOp::Enumerator:                                                     \
    return OpClass::getOperationName();
#include "lang/NodeOps.def"
    }
    return "";
  }

  Value emitNode(const Node &n, const std::vector<Value> &values) {
    OperationState state(loc(n.loc), opName(n.op));
    for (int id : n.operands)
      state.addOperands(values[id]);
    state.addTypes(tensorType(n.type));
    // A batch normalization also returns the statistics it used ([C]).
    if (n.op == NodeOp::batch_norm)
      state.addTypes({tensorType(TensorType{n.type.dtype, {n.type.dims[1]}}),
                      tensorType(TensorType{n.type.dtype, {n.type.dims[1]}})});
    for (const auto &kv : n.attrs)
      addAttr(state, kv.first, kv.second);
    return b.create(state)->getResult(0);
  }

  bool model(const ModelGraph &g) {
    for (const ModelInput &in : g.inputs)
      if (!in.type.isKnown()) {
        diags.error(in.loc, "input '" + in.name + "' of model '" + g.name +
                                "' has the symbolic shape " + in.type.str() +
                                "; give the model a train block with "
                                "data(batch = N), or pass --dim " +
                                in.type.dims[0].sym + "=N");
        return false;
      }
    if (!g.isKnown() || g.result < 0) {
      // Symbolic extents come only from inputs, which are known here.
      diags.error(g.loc, "internal error: model '" + g.name +
                             "' has shapes that are not known");
      return false;
    }
    // With the batch bound every extent is known: no tensor may be larger
    // than the planner's bound (the global batch's shapes are never
    // allocated; each rank's are bounded again when it allocates them), so
    // no size computed from one overflows.
    auto tooLarge = [&](const TensorType &t, Loc at, const std::string &what) {
      std::optional<int64_t> n = t.numElements();
      if (n && *n <= kMaxShapeElements)
        return false;
      diags.error(at, what + " " + t.str() + " has more than 2^44 elements" +
                          (n ? " (" + std::to_string(*n) + ")" : "") +
                          ", the most a tensor may hold");
      return true;
    };
    for (const ModelInput &in : g.inputs)
      if (tooLarge(in.type, in.loc, "input '" + in.name + "'"))
        return false;
    for (const Node &n : g.nodes)
      if (tooLarge(n.type, n.loc,
                   std::string("the result of '") + nodeOpName(n.op) + "'"))
        return false;

    SmallVector<Type> inputTypes;
    for (const ModelInput &in : g.inputs)
      inputTypes.push_back(tensorType(in.type));
    auto fnType =
        b.getFunctionType(inputTypes, {tensorType(g.typeOf(g.result))});
    auto fn = func::FuncOp::create(b, loc(g.loc), g.name, fnType);
    fn->setAttr("whale.model", b.getUnitAttr());
    SmallVector<Attribute> inputNames;
    for (const ModelInput &in : g.inputs)
      inputNames.push_back(b.getStringAttr(in.name));
    fn->setAttr("whale.inputs", b.getArrayAttr(inputNames));
    if (g.defaultStrategy) {
      fn->setAttr(
          "whale.default_strategy",
          StrategyAttr::get(&ctx, *g.defaultStrategy == StrategyKind::Replicate
                                      ? Strategy::replicate
                                      : Strategy::split));
      if (g.defaultDevices > 0)
        fn->setAttr("whale.default_devices",
                    b.getI64IntegerAttr(g.defaultDevices));
    }
    if (g.train)
      fn->setAttr("whale.train", settingsAttr(*g.train));

    OpBuilder::InsertionGuard guard(b);
    mlir::Block *entry = fn.addEntryBlock();
    b.setInsertionPointToStart(entry);
    std::vector<Value> values(g.inputs.size() + g.nodes.size());
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      values[i] = entry->getArgument(i);
      values[i].setLoc(loc(g.inputs[i].loc));
    }

    size_t base = g.inputs.size();
    size_t i = 0;
    while (i < g.nodes.size()) {
      int tg = g.nodes[i].taskgraph;
      size_t end = i;
      while (end < g.nodes.size() && g.nodes[end].taskgraph == tg)
        ++end;
      if (tg < 0) {
        for (; i < end; ++i)
          values[base + i] = emitNode(g.nodes[i], values);
        continue;
      }
      // The block's results: values made in it that later ops (or the
      // model's return) use.
      std::set<int> inside, used;
      for (size_t k = i; k < end; ++k)
        inside.insert(static_cast<int>(base + k));
      for (size_t k = end; k < g.nodes.size(); ++k)
        for (int id : g.nodes[k].operands)
          if (inside.count(id))
            used.insert(id);
      if (inside.count(g.result))
        used.insert(g.result);
      std::vector<int> outs(used.begin(), used.end());
      SmallVector<Type> outTypes;
      for (int id : outs)
        outTypes.push_back(tensorType(g.typeOf(id)));

      const TaskGraphInfo &info = g.taskgraphs[tg];
      auto op = TaskGraphOp::create(
          b, loc(info.loc), outTypes,
          info.strategy == StrategyKind::Replicate ? Strategy::replicate
                                                   : Strategy::split,
          info.devices > 0 ? b.getI64IntegerAttr(info.devices) : IntegerAttr());
      mlir::Block *body = &op.getBody().emplaceBlock();
      {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(body);
        for (; i < end; ++i)
          values[base + i] = emitNode(g.nodes[i], values);
        SmallVector<Value> yielded;
        for (int id : outs)
          yielded.push_back(values[id]);
        YieldOp::create(b, loc(info.loc), yielded);
      }
      for (size_t k = 0; k < outs.size(); ++k)
        values[outs[k]] = op.getResult(k);
    }
    func::ReturnOp::create(b, loc(g.loc), ValueRange{values[g.result]});
    return true;
  }

  MLIRContext &ctx;
  OpBuilder b;
  const SourceManager &sources;
  DiagnosticEngine &diags;
};

} // namespace

OwningOpRef<ModuleOp> mlirGen(MLIRContext &context, const Program &program,
                              const SourceManager &sources,
                              DiagnosticEngine &diags) {
  context.getOrLoadDialect<WhaleDialect>();
  context.getOrLoadDialect<func::FuncDialect>();
  return Generator(context, sources, diags).run(program);
}

} // namespace whale::lang
