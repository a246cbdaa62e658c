//===- WhaleToRuntime.cpp - -whale-to-runtime -----------------------------===//
//
// Each model function becomes an llvm.func that calls the runtime's C ABI
// op by op. Static shapes, axes and names become constant globals; every
// call's status is checked and the first failure returned.
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/Bf16Kernels.h"
#include "lowering/ElementProgramBuilder.h"
#include "lowering/ElementTypes.h"
#include "lowering/FormulaRegions.h"
#include "lowering/FusedKernel.h"
#include "lowering/Passes.h"
#include "lowering/RuntimeAbi.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

namespace whale {
#define GEN_PASS_DEF_WHALETORUNTIME
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

/// whale_rt_attention's `form` flags for an attention's attributes.
int32_t attentionForm(bool causal, bool sequenceMajor) {
  return (causal ? WHALE_RT_ATTENTION_CAUSAL : 0) |
         (sequenceMajor ? WHALE_RT_ATTENTION_SEQUENCE_MAJOR : 0);
}

class Lowering {
public:
  Lowering(ModuleOp module, bool sites)
      : module(module), ctx(module.getContext()), b(ctx),
        ptr(LLVM::LLVMPointerType::get(ctx)), i32(b.getI32Type()),
        i64(b.getI64Type()), f64(b.getF64Type()), sites(sites) {}

  LogicalResult lower(func::FuncOp fn);

private:
  // --- declarations and constants ---
  /// The declaration of runtime function `name`, made on first use. Kept
  /// in a map: a lookup in the module scans it, and a long step function
  /// asks once per op (quadratic in the script's size).
  LLVM::LLVMFuncOp declared(StringRef name, Type result,
                            ArrayRef<Type> params) {
    LLVM::LLVMFuncOp &f = runtimeFns[name];
    if (!f)
      f = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
    if (!f) {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(module.getBody());
      f = LLVM::LLVMFuncOp::create(b, module.getLoc(), name,
                                   LLVM::LLVMFunctionType::get(result, params));
    }
    return f;
  }
  /// The LLVM type of an ABI parameter or result of `kind`.
  Type typeOf(abi::Kind kind) {
    // In abi::Kind's order.
    const Type types[] = {LLVM::LLVMVoidType::get(ctx), i32, i64, f64, ptr};
    return types[static_cast<size_t>(kind)];
  }
  /// The declaration of `fn` with the types runtime/WhaleRuntime.h gives
  /// it, after checking that `args` match them. A mismatch is the
  /// lowering's own bug: it fails the pass (abiMismatch) with the call and
  /// the argument named, rather than emit a call the runtime would read
  /// wrongly.
  LLVM::LLVMFuncOp runtimeFn(const abi::Function &fn, ValueRange args) {
    SmallVector<Type> params;
    for (size_t i = 0; i < fn.arity; ++i)
      params.push_back(typeOf(fn.params[i]));
    if (args.size() != params.size()) {
      emitError(loc) << "internal error: the lowering calls " << fn.name
                     << " with " << args.size()
                     << " arguments, runtime/WhaleRuntime.h declares "
                     << params.size();
      abiMismatch = true;
    } else {
      for (auto [i, a] : llvm::enumerate(args))
        if (a.getType() != params[i]) {
          emitError(loc) << "internal error: argument " << i << " of "
                         << fn.name << " is " << a.getType()
                         << ", runtime/WhaleRuntime.h declares " << params[i];
          abiMismatch = true;
        }
    }
    return declared(fn.name, typeOf(fn.result), params);
  }
  Value constI32(int64_t v) {
    return LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(v));
  }
  Value constI64(int64_t v) {
    return LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(v));
  }
  Value constF64(double v) {
    return LLVM::ConstantOp::create(b, loc, f64, b.getF64FloatAttr(v));
  }
  Value nullPtr() { return LLVM::ZeroOp::create(b, loc, ptr); }
  /// The address of a constant global holding `data`, shared by equal data.
  Value global(const std::string &key, Type type, Attribute value) {
    LLVM::GlobalOp &g = globals[key];
    if (!g) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      g = LLVM::GlobalOp::create(
          b, module.getLoc(), type, /*isConstant=*/true,
          LLVM::Linkage::Internal,
          "__whale_const_" + std::to_string(globals.size()), value);
    }
    return LLVM::AddressOfOp::create(b, loc, g);
  }
  /// A convolution's {strideH, strideW, padH, padW, dilationH, dilationW,
  /// groups}, as whale_rt_conv2d takes it.
  template <class ConvLike> Value convGeometry(ConvLike op) {
    ArrayRef<int64_t> s = op.getStride(), p = op.getPadding(),
                      d = op.getDilation();
    return i64Array({s[0], s[1], p[0], p[1], d[0], d[1],
                     static_cast<int64_t>(op.getGroups())});
  }
  /// An axis counted from the end (negative) as one from the front. The
  /// attribute's getter hands an i64 back as unsigned.
  static int64_t axisOf(uint64_t attr, RankedTensorType type) {
    int64_t axis = static_cast<int64_t>(attr);
    return axis < 0 ? axis + type.getRank() : axis;
  }
  /// A pooling's {kernelH, kernelW, strideH, strideW, padH, padW}.
  template <class PoolLike> Value poolGeometry(PoolLike op) {
    ArrayRef<int64_t> k = op.getKernel(), s = op.getStride(),
                      p = op.getPadding();
    return i64Array({k[0], k[1], s[0], s[1], p[0], p[1]});
  }
  Value poolKind(StringRef kind) {
    return constI32(kind == "max" ? WHALE_RT_POOL_MAX : WHALE_RT_POOL_AVG);
  }

  Value i64Array(ArrayRef<int64_t> values) {
    if (values.empty())
      return nullPtr();
    std::string key = "i64";
    for (int64_t v : values)
      key += "," + std::to_string(v);
    auto type = LLVM::LLVMArrayType::get(i64, values.size());
    return global(key, type, b.getI64TensorAttr(values));
  }
  /// Uneven shards' weights, or null for equal parts.
  Value weightsOf(std::optional<ArrayRef<int64_t>> weights) {
    return weights ? i64Array(*weights) : nullPtr();
  }
  Value i32Array(ArrayRef<int32_t> values) {
    if (values.empty())
      return nullPtr();
    std::string key = "i32";
    for (int32_t v : values)
      key += "," + std::to_string(v);
    auto type = LLVM::LLVMArrayType::get(i32, values.size());
    return global(key, type, b.getI32TensorAttr(values));
  }
  Value f64Array(ArrayRef<double> values) {
    if (values.empty())
      return nullPtr();
    std::string key = "f64";
    for (double v : values)
      key += "," + std::to_string(v);
    auto type = LLVM::LLVMArrayType::get(f64, values.size());
    return global(
        key, type,
        DenseElementsAttr::get(
            RankedTensorType::get({static_cast<int64_t>(values.size())}, f64),
            values));
  }
  Value cString(StringRef s) {
    std::string withNul = s.str() + '\0';
    auto type = LLVM::LLVMArrayType::get(b.getI8Type(), withNul.size());
    return global("str:" + s.str(), type, b.getStringAttr(withNul));
  }

  // --- calls ---
  /// Calls a runtime function; on a non-zero status jumps to the exit block
  /// with it, else continues in a fresh block.
  void call(const abi::Function &fn, ArrayRef<Value> args) {
    assert(fn.result == abi::Kind::I32 &&
           "a call that can fail returns a status");
    LLVM::LLVMFuncOp f = runtimeFn(fn, args);
    Value status = LLVM::CallOp::create(b, loc, f, args).getResult();
    Value failed = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, status,
                                        constI32(WHALE_RT_OK));
    Block *next = b.getInsertionBlock()->splitBlock(b.getInsertionPoint());
    LLVM::CondBrOp::create(b, loc, failed, exit, ValueRange{status}, next,
                           ValueRange{});
    b.setInsertionPointToStart(next);
  }
  /// Calls a runtime function that cannot fail.
  void callVoid(const abi::Function &fn, ArrayRef<Value> args) {
    assert(fn.result == abi::Kind::Void && "a status must be checked");
    LLVM::CallOp::create(b, loc, runtimeFn(fn, args), args);
  }
  /// A new tensor of `type` from the runtime.
  FailureOr<Value> createTensor(RankedTensorType type) {
    Type e = type.getElementType();
    int32_t dtype = e.isF32()         ? WHALE_RT_F32
                    : e.isF64()       ? WHALE_RT_F64
                    : e.isInteger(32) ? WHALE_RT_I32
                    : e.isInteger(64) ? WHALE_RT_I64
                    : e.isBF16()      ? WHALE_RT_BF16
                                      : -1;
    if (dtype < 0)
      return emitError(loc) << "the CPU runtime has no " << e << " tensors yet";
    call(WHALE_RT_FN(tensor_create),
         {ctxArg, constI32(dtype), constI32(type.getRank()),
          i64Array(type.getShape()), slot});
    return LLVM::LoadOp::create(b, loc, ptr, slot).getResult();
  }

  /// Emits `update` to run only on the rank that owns `op`'s parameter
  /// (its `owner` in its `group`: optimizer state sharded, ZeRO stage 1);
  /// on every rank when `op` names no owner.
  void onOwner(Operation *op, llvm::function_ref<void()> update) {
    auto owner = op->getAttrOfType<IntegerAttr>("owner");
    if (!owner) {
      update();
      return;
    }
    auto group = op->getAttrOfType<StringAttr>("group");
    auto shards = op->getAttrOfType<IntegerAttr>("shards");
    Value mine = LLVM::AllocaOp::create(b, loc, ptr, i32, constI64(1));
    call(WHALE_RT_FN(owns),
         {ctxArg,
          constI32(shards ? WHALE_RT_GROUP_SHARD_PEERS : groupKind(group)),
          constI32(shards ? shards.getInt() : 0), constI32(owner.getInt()),
          mine});
    Value isMine =
        LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne,
                             LLVM::LoadOp::create(b, loc, i32, mine),
                             constI32(0));
    Block *after = b.getInsertionBlock()->splitBlock(b.getInsertionPoint());
    Block *then = new Block();
    then->insertBefore(after);
    LLVM::CondBrOp::create(b, loc, isMine, then, ValueRange{}, after,
                           ValueRange{});
    b.setInsertionPointToStart(then);
    update();
    LLVM::BrOp::create(b, loc, ValueRange{}, after);
    b.setInsertionPointToStart(after);
  }

  /// The handles of `values`, in an array on the stack.
  Value handleArray(ValueRange values) {
    int64_t n = values.size();
    Value array = LLVM::AllocaOp::create(b, loc, ptr, ptr,
                                         constI64(std::max<int64_t>(n, 1)));
    for (int64_t i = 0; i < n; ++i) {
      Value at =
          LLVM::GEPOp::create(b, loc, ptr, ptr, array,
                              ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
      LLVM::StoreOp::create(b, loc, handles.lookup(values[i]), at);
    }
    return array;
  }
  /// WHALE_RT_GROUP_* of a group name the verifiers have checked.
  static int32_t groupKind(StringRef group) {
    return group == "stages" ? WHALE_RT_GROUP_STAGES : WHALE_RT_GROUP_REPLICAS;
  }

  LogicalResult lowerOp(Operation *op);

  /// Runs of consecutive Adam updates that one call can make: the same
  /// hyperparameters and the same group (owners may differ), each run
  /// keyed by its first update. With `sites` every update is a run of its
  /// own: a profile times each op at its site, and the simulator prices
  /// each update as its own event.
  void findAdamRuns(ArrayRef<Operation *> ops) {
    adamRuns.clear();
    auto joins = [this](AdamUpdateOp a, Operation *op) {
      auto b = dyn_cast<AdamUpdateOp>(op);
      return !sites && b && a.getLr() == b.getLr() &&
             a.getBeta1() == b.getBeta1() && a.getBeta2() == b.getBeta2() &&
             a.getEps() == b.getEps() &&
             a.getWeightDecay() == b.getWeightDecay() &&
             a.getDecoupled() == b.getDecoupled() &&
             a->getAttr("group") == b->getAttr("group") &&
             a->getAttr("shards") == b->getAttr("shards");
    };
    for (size_t i = 0; i < ops.size();) {
      auto head = dyn_cast<AdamUpdateOp>(ops[i]);
      size_t end = i + 1;
      if (head)
        while (end < ops.size() && joins(head, ops[end]))
          ++end;
      if (head)
        adamRuns[ops[i]].assign(ops.begin() + i, ops.begin() + end);
      i = end;
    }
  }
  /// A run's updates by owner, in order of each owner's first update.
  static SmallVector<SmallVector<Operation *>>
  byOwner(ArrayRef<Operation *> run) {
    SmallVector<SmallVector<Operation *>> groups;
    SmallVector<Attribute> owners;
    for (Operation *op : run) {
      Attribute owner = op->getAttr("owner");
      auto at = llvm::find(owners, owner);
      if (at == owners.end()) {
        owners.push_back(owner);
        groups.emplace_back();
        at = owners.end() - 1;
      }
      groups[at - owners.begin()].push_back(op);
    }
    return groups;
  }

  /// The module nested in this one that collects the generated kernels.
  ModuleOp kernelModule() {
    if (!kernels) {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToEnd(module.getBody());
      kernels = ModuleOp::create(b, module.getLoc(), kKernelModule);
    }
    return kernels;
  }

  ModuleOp module;
  MLIRContext *ctx;
  OpBuilder b;
  Type ptr, i32, i64, f64;
  bool sites; ///< mark each op for traces (whale_rt_set_site)
  Location loc = UnknownLoc::get(ctx);
  std::map<std::string, LLVM::GlobalOp> globals;
  llvm::StringMap<LLVM::LLVMFuncOp> runtimeFns;
  ModuleOp kernels; ///< whale_kernels, once a fused region needs it
  /// Each kernel's name and launch by what it computes at which types.
  /// A fused region's generated kernel: its name, its launch, and the
  /// element program GPUs run instead (empty where none runs it).
  struct FusedCode {
    std::string name;
    FusedLaunch launch;
    std::vector<int64_t> program;
  };
  std::map<std::string, FusedCode> kernelOf;
  // Per function:
  Value ctxArg, slot;
  Block *exit = nullptr;
  DenseMap<Value, Value> handles; // whale value -> tensor handle
  bool abiMismatch = false;       ///< a call disagreed with the C declaration
  /// Reshapes that are their input's last reader: they take its memory
  /// instead of copying it.
  llvm::DenseSet<Operation *> reshapesTaking;
  /// findAdamRuns: each run's updates, keyed by its first.
  DenseMap<Operation *, SmallVector<Operation *>> adamRuns;
};

/// bf16 is storage (amp): an op takes it only where the runtime has a bf16
/// kernel for it (lowering/Bf16Kernels.h). Refused here, where the op and
/// its line are known, rather than by the runtime when the step runs.
static LogicalResult checkBf16Operands(Operation *op) {
  if (runsOnBf16(op))
    return success();
  if (llvm::any_of(op->getOperandTypes(), isBf16Tensor) ||
      llvm::any_of(op->getResultTypes(), isBf16Tensor))
    return op->emitOpError("computes in f32 on the runtime; a bf16 value "
                           "reaches it only through whale.cast");
  return success();
}

LogicalResult Lowering::lowerOp(Operation *op) {
  loc = op->getLoc();
  auto in = [&](unsigned i) { return handles.lookup(op->getOperand(i)); };

  if (auto p = dyn_cast<ParamOp>(op)) {
    RankedTensorType t = p.getType();
    if (!t.getElementType().isF32())
      return p.emitOpError("the CPU runtime keeps f32 parameters only");
    ArrayRef<double> args = p.getInitArgs();
    if (std::optional<ArrayRef<int64_t>> shard = p.getShard()) {
      call(WHALE_RT_FN(param_shard),
           {ctxArg, cString(p.getName()),
            constI32(static_cast<int32_t>(p.getInit())), f64Array(args),
            constI32(args.size()), constI32(t.getRank()),
            i64Array(p.getFullType().getShape()), constI32((*shard)[0]),
            constI32((*shard)[1]), weightsOf(p.getShardWeights()), slot});
      handles[p.getResult()] = LLVM::LoadOp::create(b, loc, ptr, slot);
      return success();
    }
    call(WHALE_RT_FN(param),
         {ctxArg, cString(p.getName()),
          constI32(static_cast<int32_t>(p.getInit())), f64Array(args),
          constI32(args.size()), constI32(t.getRank()), i64Array(t.getShape()),
          slot});
    handles[p.getResult()] = LLVM::LoadOp::create(b, loc, ptr, slot);
    return success();
  }
  if (failed(checkBf16Operands(op)))
    return failure();

  // An op of several results: a tensor for each, made before the call.
  auto resultTensors = [&](Operation *multi,
                           SmallVector<Value> &outs) -> LogicalResult {
    for (Value r : multi->getResults()) {
      FailureOr<Value> t = createTensor(cast<RankedTensorType>(r.getType()));
      if (failed(t))
        return failure();
      handles[r] = *t;
      outs.push_back(*t);
    }
    return success();
  };
  // The fused ops of several results: each result's tensor made first.
  if (isa<AttentionGradOp, LinearOp, LinearWeightGradOp, GeluMatmulGradOp,
          RoundAndSumOp, RoundedCrossEntropyGradOp>(op)) {
    SmallVector<Value> outs;
    if (failed(resultTensors(op, outs)))
      return failure();
    if (auto ag = dyn_cast<AttentionGradOp>(op))
      call(WHALE_RT_FN(attention_grad),
           {ctxArg, in(0), in(1), in(2), in(3), in(4),
            constF64(ag.getScale().convertToDouble()),
            constI32(attentionForm(ag.getCausal(), ag.getSequenceMajor())),
            outs[0], outs[1], outs[2]});
    else if (auto linear = dyn_cast<LinearOp>(op))
      call(WHALE_RT_FN(linear),
           {ctxArg, in(0), in(1), in(2), outs[0],
            outs.size() > 1 ? outs[1] : nullPtr(),
            constI32(linear.getTransposeWeight()), constI32(linear.getGelu())});
    else if (auto g = dyn_cast<LinearWeightGradOp>(op))
      call(WHALE_RT_FN(linear_weight_grad),
           {ctxArg, in(0), in(1), outs[0], outs[1],
            constI32(g.getTransposeWeight())});
    else if (auto g = dyn_cast<GeluMatmulGradOp>(op))
      call(WHALE_RT_FN(gelu_matmul_grad), {ctxArg, in(0), in(1), in(2), outs[0],
                                           constI32(g.getTransposeWeight())});
    else if (isa<RoundAndSumOp>(op))
      call(WHALE_RT_FN(round_and_sum), {ctxArg, in(0), outs[0], outs[1]});
    else
      call(WHALE_RT_FN(cross_entropy_grad_rounded),
           {ctxArg, in(0), in(1), in(2), outs[0], outs[1]});
    return success();
  }

  if (auto fused = dyn_cast<FusedOp>(op)) {
    SmallVector<Value> outs;
    if (failed(resultTensors(fused, outs)))
      return failure();
    // Regions that compute the same thing at the same shapes (each layer's
    // of a model) share one kernel.
    std::string key;
    llvm::raw_string_ostream keyOs(key);
    keyOs << fused.getBodySignature() << " : ";
    llvm::interleaveComma(fused.getInputs().getTypes(), keyOs);
    keyOs << " -> ";
    llvm::interleaveComma(fused.getResultTypes(), keyOs);
    auto [it, added] = kernelOf.try_emplace(key);
    if (added) {
      FusedCode &code = it->second;
      code.name = "__whale_fused_" + std::to_string(kernelOf.size() - 1);
      code.launch = buildFusedKernel(fused, kernelModule(), code.name);
      std::string why;
      code.program = buildFusedProgram(fused, why);
    }
    const std::string &name = it->second.name;
    FusedLaunch launch = it->second.launch;
    const std::vector<int64_t> &program = it->second.program;
    LLVM::LLVMFuncOp kernel = declared(
        name, LLVM::LLVMVoidType::get(ctx), {ptr, i64, i64});
    Value fn = LLVM::AddressOfOp::create(b, loc, kernel);
    // Its name in traces and errors: the ops it runs.
    std::string label = "fused:";
    for (Operation &inner : fused.getBody().front().without_terminator())
      label += " " + inner.getName().stripDialect().str();
    call(WHALE_RT_FN(fused),
         {ctxArg, cString(label), fn, i64Array(program),
          constI64(static_cast<int64_t>(program.size())),
          constI32(fused.getNumOperands()), handleArray(fused.getInputs()),
          constI32(outs.size()), handleArray(fused.getResults()),
          constI64(launch.rows), constI64(launch.rowElements)});
    return success();
  }

  if (auto cg = dyn_cast<Conv2dGradOp>(op)) {
    SmallVector<Value> outs;
    if (failed(resultTensors(cg, outs)))
      return failure();
    call(WHALE_RT_FN(conv2d_grad),
         {ctxArg, in(0), in(1), in(2), convGeometry(cg), outs[0], outs[1]});
    return success();
  }

  if (auto tg = dyn_cast<TopKGradOp>(op)) {
    SmallVector<Value> outs;
    if (failed(resultTensors(tg, outs)))
      return failure();
    call(WHALE_RT_FN(topk_grad),
         {ctxArg, in(0), constI64(tg.getK()), in(1), outs[0]});
    return success();
  }

  if (auto pg = dyn_cast<Pool2dGradOp>(op)) {
    SmallVector<Value> outs;
    if (failed(resultTensors(pg, outs)))
      return failure();
    call(WHALE_RT_FN(pool2d_grad), {ctxArg, poolKind(pg.getKind()), in(0),
                                    in(1), poolGeometry(pg), outs[0]});
    return success();
  }

  if (auto bn = dyn_cast<BatchNormOp>(op)) {
    SmallVector<Value> outs;
    if (failed(resultTensors(bn, outs)))
      return failure();
    call(WHALE_RT_FN(batch_norm),
         {ctxArg, in(0), in(1), in(2), in(3), in(4),
          constF64(bn.getMomentum().convertToDouble()),
          constF64(bn.getEps().convertToDouble()), constI64(bn.getRowCopies()),
          outs[0], outs[1], outs[2]});
    return success();
  }

  if (auto bn = dyn_cast<BatchNormGradOp>(op)) {
    SmallVector<Value> outs;
    if (failed(resultTensors(bn, outs)))
      return failure();
    call(WHALE_RT_FN(batch_norm_grad), {ctxArg, in(0), in(1), in(2), in(3),
                                        in(4), outs[0], outs[1], outs[2]});
    return success();
  }

  if (auto ln = dyn_cast<LayerNormGradOp>(op)) {
    SmallVector<Value> outs;
    if (failed(resultTensors(ln, outs)))
      return failure();
    Value eps = constF64(ln.getEps().convertToDouble());
    if (ln.getResidual())
      call(
          WHALE_RT_FN(layernorm_grad_residual),
          {ctxArg, in(0), in(1), eps, in(2), in(3), outs[0], outs[1], outs[2]});
    else
      call(WHALE_RT_FN(layernorm_grad),
           {ctxArg, in(0), in(1), eps, in(2), outs[0], outs[1], outs[2]});
    return success();
  }

  // Updates write a parameter in place; clipping scales its gradients in
  // place, so its results are its operands' tensors.
  if (auto u = dyn_cast<SgdUpdateOp>(op)) {
    onOwner(op, [&] {
      call(WHALE_RT_FN(sgd_step),
           {ctxArg, in(0), in(1), constF64(u.getLr().convertToDouble()),
            constF64(u.getMomentum().convertToDouble()),
            constF64(u.getWeightDecay().convertToDouble())});
    });
    return success();
  }
  if (auto u = dyn_cast<AdamUpdateOp>(op)) {
    auto run = adamRuns.find(op);
    if (run == adamRuns.end()) // lowered with the head of its run
      return success();
    SmallVector<Value> hyper = {constF64(u.getLr().convertToDouble()),
                                constF64(u.getBeta1().convertToDouble()),
                                constF64(u.getBeta2().convertToDouble()),
                                constF64(u.getEps().convertToDouble()),
                                constF64(u.getWeightDecay().convertToDouble()),
                                constI32(u.getDecoupled())};
    // A run's updates are independent: those of one owner run together,
    // as one call (one launch for many on a GPU).
    for (ArrayRef<Operation *> mine : byOwner(run->second))
      onOwner(mine.front(), [&] {
        if (mine.size() == 1) {
          SmallVector<Value> args = {
              ctxArg, handles.lookup(mine.front()->getOperand(0)),
              handles.lookup(mine.front()->getOperand(1))};
          args.append(hyper);
          call(WHALE_RT_FN(adam_step), args);
          return;
        }
        SmallVector<Value> params, grads;
        for (Operation *m : mine) {
          params.push_back(m->getOperand(0));
          grads.push_back(m->getOperand(1));
        }
        SmallVector<Value> args = {ctxArg,
                                   constI32(static_cast<int32_t>(mine.size())),
                                   handleArray(params), handleArray(grads)};
        args.append(hyper);
        call(WHALE_RT_FN(adam_steps), args);
      });
    return success();
  }
  if (auto bc = dyn_cast<BroadcastOp>(op)) {
    std::optional<int64_t> shards = bc.getShards();
    call(WHALE_RT_FN(broadcast_from_owners),
         {ctxArg,
          constI32(shards ? WHALE_RT_GROUP_SHARD_PEERS
                          : groupKind(bc.getGroup())),
          constI32(shards.value_or(0)),
          constI32(static_cast<int32_t>(bc.getParams().size())),
          handleArray(op->getOperands()),
          i32Array(SmallVector<int32_t>(bc.getOwners().begin(),
                                        bc.getOwners().end()))});
    return success();
  }
  if (auto c = dyn_cast<ClipGradNormOp>(op)) {
    int64_t n = c.getGrads().size();
    Value array = handleArray(op->getOperands());
    for (int64_t i = 0; i < n; ++i)
      handles[c.getResult(i)] = in(i);
    if (std::optional<ArrayRef<int64_t>> owners = c.getOwners()) {
      std::optional<StringRef> group = c.getGroup();
      std::optional<ArrayRef<bool>> sharded = c.getSharded();
      call(WHALE_RT_FN(clip_grad_norm_owned),
           {ctxArg, constI32(group ? groupKind(*group) : -1),
            constI32(c.getShards().value_or(0)), constI32(n), array,
            sharded ? i32Array(SmallVector<int32_t>(sharded->begin(),
                                                    sharded->end()))
                    : nullPtr(),
            i32Array(SmallVector<int32_t>(owners->begin(), owners->end())),
            constF64(c.getMaxNorm().convertToDouble()), nullPtr()});
    } else if (std::optional<ArrayRef<bool>> sharded = c.getSharded()) {
      SmallVector<int32_t> flags(sharded->begin(), sharded->end());
      std::optional<StringRef> group = c.getGroup();
      call(WHALE_RT_FN(clip_grad_norm_sharded),
           {ctxArg, constI32(group ? groupKind(*group) : -1),
            constI32(*c.getShards()), constI32(n), array, i32Array(flags),
            constF64(c.getMaxNorm().convertToDouble()), nullPtr()});
    } else if (std::optional<StringRef> group = c.getGroup())
      call(WHALE_RT_FN(clip_grad_norm_group),
           {ctxArg, constI32(groupKind(*group)), constI32(n), array,
            constF64(c.getMaxNorm().convertToDouble()), nullPtr()});
    else
      call(WHALE_RT_FN(clip_grad_norm),
           {ctxArg, constI32(n), array,
            constF64(c.getMaxNorm().convertToDouble()), nullPtr()});
    return success();
  }
  // Communication: peers by stage and groups by kind, which the runtime
  // resolves from where the context sits in the plan.
  if (auto ar = dyn_cast<AllReduceOp>(op)) {
    int64_t n = ar.getValues().size();
    Value array = handleArray(op->getOperands());
    for (int64_t i = 0; i < n; ++i)
      handles[ar.getResult(i)] = in(i);
    if (std::optional<ArrayRef<int64_t>> owners = ar.getOwners()) {
      std::optional<int64_t> shards = ar.getShards();
      SmallVector<int32_t> positions(owners->begin(), owners->end());
      call(WHALE_RT_FN(reduce_to_owners),
           {ctxArg,
            constI32(shards ? WHALE_RT_GROUP_SHARD_PEERS
                            : groupKind(ar.getGroup())),
            constI32(shards.value_or(0)), constI32(n), array,
            i32Array(positions)});
    } else if (ar.getGroup() == "shard_peers")
      call(WHALE_RT_FN(all_reduce_peers),
           {ctxArg, constI32(*ar.getShards()), constI32(n), array});
    else
      call(WHALE_RT_FN(all_reduce),
           {ctxArg, constI32(groupKind(ar.getGroup())), constI32(n), array});
    return success();
  }
  if (auto start = dyn_cast<AllReduceStartOp>(op)) {
    std::optional<int64_t> shards = start.getShards();
    Value request = LLVM::AllocaOp::create(b, loc, ptr, i64, constI64(1));
    SmallVector<Value> args = {
        ctxArg,
        constI32(shards ? WHALE_RT_GROUP_SHARD_PEERS
                        : groupKind(start.getGroup())),
        constI32(shards.value_or(0)),
        constI32(static_cast<int32_t>(start.getValues().size())),
        handleArray(op->getOperands())};
    if (std::optional<ArrayRef<int64_t>> owners = start.getOwners()) {
      args.push_back(
          i32Array(SmallVector<int32_t>(owners->begin(), owners->end())));
      args.push_back(request);
      call(WHALE_RT_FN(reduce_to_owners_start), args);
    } else {
      args.push_back(request);
      call(WHALE_RT_FN(all_reduce_start), args);
    }
    handles[start.getPending()] = LLVM::LoadOp::create(b, loc, i64, request);
    return success();
  }
  if (auto wait = dyn_cast<AllReduceWaitOp>(op)) {
    // The sums are written into the tensors the start was given.
    for (auto [r, v] :
         llvm::zip(wait.getResults(), wait.getStart().getValues()))
      handles[r] = handles.lookup(v);
    call(WHALE_RT_FN(all_reduce_wait), {ctxArg, in(0)});
    return success();
  }
  if (auto s = dyn_cast<SendOp>(op)) {
    call(WHALE_RT_FN(send),
         {ctxArg, constI32(s.getStage()), constI64(s.getTag()), in(0)});
    return success();
  }

  if (op->getNumResults() != 1)
    return op->emitOpError("has no lowering to the runtime");
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  if (reshapesTaking.count(op)) {
    call(WHALE_RT_FN(reshape_take), {ctxArg, in(0), constI32(type.getRank()),
                                     i64Array(type.getShape()), slot});
    handles[op->getResult(0)] = LLVM::LoadOp::create(b, loc, ptr, slot);
    return success();
  }
  FailureOr<Value> out = createTensor(type);
  if (failed(out))
    return failure();
  handles[op->getResult(0)] = *out;

  auto binary = [&](int32_t kind) {
    call(WHALE_RT_FN(binary), {ctxArg, constI32(kind), in(0), in(1), *out});
  };
  auto unary = [&](int32_t kind) {
    call(WHALE_RT_FN(unary), {ctxArg, constI32(kind), in(0), *out});
  };
  auto reduce = [&](int32_t kind, ArrayRef<int64_t> axes) {
    call(WHALE_RT_FN(reduce), {ctxArg, constI32(kind), in(0),
                               constI32(axes.size()), i64Array(axes), *out});
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](ConstantOp c) {
        call(WHALE_RT_FN(fill),
             {ctxArg, *out, constF64(c.getValue().convertToDouble())});
        return success();
      })
      .Case([&](MatmulOp m) {
        call(WHALE_RT_FN(matmul),
             {ctxArg, in(0), in(1), *out, constI32(m.getTransposeLhs()),
              constI32(m.getTransposeRhs())});
        return success();
      })
      .Case([&](AddOp) {
        binary(WHALE_RT_ADD);
        return success();
      })
      .Case([&](SubOp) {
        binary(WHALE_RT_SUB);
        return success();
      })
      .Case([&](MulOp) {
        binary(WHALE_RT_MUL);
        return success();
      })
      .Case([&](DivOp) {
        binary(WHALE_RT_DIV);
        return success();
      })
      .Case([&](NegOp) {
        unary(WHALE_RT_NEG);
        return success();
      })
      .Case([&](ReluOp) {
        unary(WHALE_RT_RELU);
        return success();
      })
      .Case([&](GeluOp) {
        unary(WHALE_RT_GELU);
        return success();
      })
      .Case([&](TanhOp) {
        unary(WHALE_RT_TANH);
        return success();
      })
      .Case([&](ExpOp) {
        unary(WHALE_RT_EXP);
        return success();
      })
      .Case([&](LogOp) {
        unary(WHALE_RT_LOG);
        return success();
      })
      .Case([&](SqrtOp) {
        unary(WHALE_RT_SQRT);
        return success();
      })
      .Case([&](CastOp) {
        call(WHALE_RT_FN(cast), {ctxArg, in(0), *out});
        return success();
      })
      .Case([&](CausalMaskOp) {
        call(WHALE_RT_FN(causal_mask), {ctxArg, in(0), *out});
        return success();
      })
      .Case([&](AttentionOp a) {
        call(WHALE_RT_FN(attention),
             {ctxArg, in(0), in(1), in(2),
              constF64(a.getScale().convertToDouble()),
              constI32(attentionForm(a.getCausal(), a.getSequenceMajor())),
              *out});
        return success();
      })
      .Case([&](SoftmaxOp s) {
        int64_t axis = axisOf(s.getAxis(), type);
        call(WHALE_RT_FN(softmax), {ctxArg, in(0), constI64(axis), *out});
        return success();
      })
      .Case([&](LayerNormOp l) {
        call(WHALE_RT_FN(layernorm),
             {ctxArg, in(0), in(1), in(2),
              constF64(l.getEps().convertToDouble()), *out});
        return success();
      })
      .Case([&](TopKOp t) {
        Value none = nullPtr();
        call(WHALE_RT_FN(topk),
             {ctxArg, in(0), constI64(t.getK()), t.getIndices() ? none : *out,
              t.getIndices() ? *out : none});
        return success();
      })
      .Case([&](MoeDispatchOp d) {
        call(WHALE_RT_FN(moe_dispatch),
             {ctxArg, in(0), in(1), d.getGates() ? in(2) : nullPtr(), *out});
        return success();
      })
      .Case([&](MoeCombineOp c) {
        call(WHALE_RT_FN(moe_combine),
             {ctxArg, in(0), in(1), c.getGates() ? in(2) : nullPtr(), *out});
        return success();
      })
      .Case([&](MoeGateGradOp) {
        call(WHALE_RT_FN(moe_gate_grad), {ctxArg, in(0), in(1), in(2), *out});
        return success();
      })
      .Case([&](DropoutOp d) {
        call(WHALE_RT_FN(dropout),
             {ctxArg, in(0), constF64(d.getRate().convertToDouble()),
              constI64(d.getKey()), constI64(d.getRowOffset()), *out});
        return success();
      })
      .Case([&](OneHotOp h) {
        call(WHALE_RT_FN(one_hot),
             {ctxArg, in(0), constI64(h.getClasses()), *out});
        return success();
      })
      .Case([&](Conv2dOp c) {
        call(WHALE_RT_FN(conv2d),
             {ctxArg, in(0), in(1), convGeometry(c), *out});
        return success();
      })
      .Case([&](Pool2dOp p) {
        call(WHALE_RT_FN(pool2d),
             {ctxArg, poolKind(p.getKind()), in(0), poolGeometry(p), *out});
        return success();
      })
      .Case([&](EmbeddingOp) {
        call(WHALE_RT_FN(embedding), {ctxArg, in(0), in(1), *out});
        return success();
      })
      .Case([&](CrossEntropyOp) {
        call(WHALE_RT_FN(cross_entropy), {ctxArg, in(0), in(1), *out});
        return success();
      })
      .Case([&](ReduceSumOp r) {
        reduce(WHALE_RT_SUM, r.getAxes());
        return success();
      })
      .Case([&](ReduceMeanOp r) {
        reduce(WHALE_RT_MEAN, r.getAxes());
        return success();
      })
      .Case([&](ReduceMaxOp r) {
        reduce(WHALE_RT_MAX, r.getAxes());
        return success();
      })
      .Case([&](ReshapeOp) {
        call(WHALE_RT_FN(reshape), {ctxArg, in(0), *out});
        return success();
      })
      .Case([&](TransposeOp t) {
        call(WHALE_RT_FN(transpose),
             {ctxArg, in(0), i64Array(t.getPermutation()), *out});
        return success();
      })
      .Case([&](SliceOp s) {
        int64_t axis = axisOf(s.getAxis(), type);
        call(WHALE_RT_FN(slice),
             {ctxArg, in(0), constI64(axis), constI64(s.getStart()),
              constI64(s.getEnd()), *out});
        return success();
      })
      .Case([&](RecvOp r) {
        call(WHALE_RT_FN(recv),
             {ctxArg, constI32(r.getStage()), constI64(r.getTag()), *out});
        return success();
      })
      .Case([&](ConcatOp c) {
        int64_t n = c.getInputs().size();
        Value array = handleArray(c.getInputs());
        int64_t axis = axisOf(c.getAxis(), type);
        call(WHALE_RT_FN(concat),
             {ctxArg, constI32(n), array, constI64(axis), *out});
        return success();
      })
      // Tensor parallelism: the runtime knows the rank's part.
      .Case([&](AllGatherOp g) {
        call(WHALE_RT_FN(all_gather),
             {ctxArg, constI32(g.getShards()), weightsOf(g.getWeights()),
              constI64(g.getAxis()), in(0), *out});
        return success();
      })
      .Case([&](AllToAllOp g) {
        call(WHALE_RT_FN(all_to_all),
             {ctxArg, constI32(g.getShards()), weightsOf(g.getWeights()),
              constI64(g.getSplitAxis()), constI64(g.getConcatAxis()), in(0),
              *out});
        return success();
      })
      .Case([&](ShardSliceOp g) {
        call(WHALE_RT_FN(shard_slice),
             {ctxArg, constI32(g.getShards()), weightsOf(g.getWeights()),
              constI64(g.getAxis()), in(0), *out});
        return success();
      })
      .Case([&](ShardSumOp g) {
        call(WHALE_RT_FN(shard_sum),
             {ctxArg, constI32(g.getShards()), in(0), *out});
        return success();
      })
      .Case([&](FanoutOp) {
        // The value itself; its own buffer keeps the liveness rules simple.
        call(WHALE_RT_FN(reshape), {ctxArg, in(0), *out});
        return success();
      })
      .Case([&](ShardedCrossEntropyOp c) {
        call(WHALE_RT_FN(sharded_cross_entropy),
             {ctxArg, constI32(c.getShards()), weightsOf(c.getWeights()), in(0),
              in(1), *out});
        return success();
      })
      .Case([&](ShardedCrossEntropyGradOp c) {
        call(WHALE_RT_FN(sharded_cross_entropy_grad),
             {ctxArg, constI32(c.getShards()), weightsOf(c.getWeights()), in(0),
              in(1), in(2), *out});
        return success();
      })
      // Gradients: the operand not asked for gets a null handle.
      .Case([&](MatmulGradOp g) {
        bool lhs = g.getOperand() == 0;
        call(WHALE_RT_FN(matmul_grad),
             {ctxArg, in(0), in(1), in(2), lhs ? *out : nullPtr(),
              lhs ? nullPtr() : *out, constI32(g.getTransposeLhs()),
              constI32(g.getTransposeRhs())});
        return success();
      })
      .Case([&](BinaryGradOp g) {
        bool lhs = g.getOperand() == 0;
        call(WHALE_RT_FN(binary_grad),
             {ctxArg, constI32(static_cast<int32_t>(g.getKind())), in(0), in(1),
              in(2), lhs ? *out : nullPtr(), lhs ? nullPtr() : *out});
        return success();
      })
      .Case([&](UnaryGradOp g) {
        call(WHALE_RT_FN(unary_grad),
             {ctxArg, constI32(static_cast<int32_t>(g.getKind())), in(0), in(1),
              in(2), *out});
        return success();
      })
      .Case([&](SoftmaxGradOp g) {
        int64_t axis = axisOf(g.getAxis(), type);
        call(WHALE_RT_FN(softmax_grad),
             {ctxArg, in(0), in(1), constI64(axis), *out});
        return success();
      })
      .Case([&](CausalMaskGradOp) {
        call(WHALE_RT_FN(causal_mask_grad), {ctxArg, in(0), *out});
        return success();
      })
      .Case([&](EmbeddingGradOp) {
        call(WHALE_RT_FN(embedding_grad), {ctxArg, in(0), in(1), *out});
        return success();
      })
      .Case([&](CrossEntropyGradOp) {
        call(WHALE_RT_FN(cross_entropy_grad),
             {ctxArg, in(0), in(1), in(2), *out});
        return success();
      })
      .Case([&](ReduceGradOp g) {
        call(WHALE_RT_FN(reduce_grad),
             {ctxArg, constI32(static_cast<int32_t>(g.getKind())), in(0),
              constI32(g.getAxes().size()), i64Array(g.getAxes()), in(1),
              *out});
        return success();
      })
      .Case([&](SliceGradOp g) {
        int64_t axis = axisOf(g.getAxis(), type);
        call(WHALE_RT_FN(slice_grad),
             {ctxArg, in(0), constI64(axis), constI64(g.getStart()), *out});
        return success();
      })
      .Default([&](Operation *o) {
        return o->emitOpError("has no lowering to the runtime");
      });
}

LogicalResult Lowering::lower(func::FuncOp fn) {
  loc = fn.getLoc();
  handles.clear();
  // The program in order, TaskGraph bodies in place; a TaskGraph's results
  // are the values its yield hands on.
  SmallVector<Operation *> ops;
  DenseMap<Value, Value> alias;
  fn.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (auto y = dyn_cast<YieldOp>(op)) {
      auto tg = cast<TaskGraphOp>(y->getParentOp());
      for (auto [r, v] : llvm::zip(tg.getResults(), y.getValues()))
        alias[r] = v;
    } else if (op->getDialect() && isa<WhaleDialect>(op->getDialect()) &&
               !isa<TaskGraphOp>(op)) {
      ops.push_back(op);
      // A fused region's ops are its kernel's, not calls of their own.
      if (isa<FusedOp>(op))
        return WalkResult::skip();
    }
    return WalkResult::advance();
  });
  auto resolve = [&](Value v) {
    while (alias.count(v))
      v = alias.lookup(v);
    return v;
  };
  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  if (ret.getNumOperands() < 1)
    return fn.emitOpError("a model returns at least one value");
  SmallVector<Value> results;
  for (Value v : ret.getOperands())
    results.push_back(resolve(v));
  auto isResult = [&](Value v) { return llvm::is_contained(results, v); };

  // The last op to read each value, so its tensor is released right after.
  DenseMap<Value, Operation *> lastUse;
  for (Operation *op : ops)
    for (Value v : op->getOperands())
      lastUse[resolve(v)] = op;

  // A reshape moves no bytes (the cost model's view) where nothing reads
  // its input after it: it takes the input's memory. Not the memory of an
  // input, a parameter or a result (the caller's), nor of a tensor an
  // op wrote in place (clipping's, a collective's: their handles are
  // their operands').
  reshapesTaking.clear();
  for (Operation *op : ops) {
    if (!isa<ReshapeOp>(op))
      continue;
    Value r = resolve(op->getOperand(0));
    Operation *def = r.getDefiningOp();
    if (lastUse.lookup(r) == op && !isResult(r) && def &&
        !isa<ParamOp, ClipGradNormOp, AllReduceOp, AllReduceStartOp,
             AllReduceWaitOp>(def))
      reshapesTaking.insert(op);
  }

  findAdamRuns(ops);

  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(fn);
  auto type = LLVM::LLVMFunctionType::get(i32, {ptr, ptr, ptr});
  std::string name = fn.getName().str();
  fn.setName(name + ".whale"); // make room for the lowered function
  auto lowered = LLVM::LLVMFuncOp::create(b, fn.getLoc(), name, type);
  Block *entry = lowered.addEntryBlock(b);
  exit = new Block();
  lowered.getBody().push_back(exit);
  exit->addArgument(i32, fn.getLoc());
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(exit);
    LLVM::ReturnOp::create(b, fn.getLoc(), exit->getArgument(0));
  }
  b.setInsertionPointToStart(entry);
  ctxArg = entry->getArgument(0);
  Value inputs = entry->getArgument(1), resultOut = entry->getArgument(2);
  slot = LLVM::AllocaOp::create(b, loc, ptr, ptr, constI64(1));
  for (BlockArgument arg : fn.getArguments()) {
    Value at = LLVM::GEPOp::create(
        b, loc, ptr, ptr, inputs,
        ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(arg.getArgNumber())});
    handles[arg] = LLVM::LoadOp::create(b, loc, ptr, at);
  }

  // Each op's place in the function's body, for traces.
  DenseMap<Operation *, int64_t> position;
  if (sites)
    for (auto [i, op] : llvm::enumerate(fn.getBody().front()))
      position[&op] = static_cast<int64_t>(i);
  for (Operation *op : ops) {
    if (auto at = position.find(op); at != position.end())
      callVoid(WHALE_RT_FN(set_site), {ctxArg, constI64(at->second)});
    // Operands may be TaskGraph results: read them through their yields
    // (all of a run's, whose first update makes them all).
    auto run = adamRuns.find(op);
    for (Operation *reader : run != adamRuns.end()
                                 ? ArrayRef<Operation *>(run->second)
                                 : ArrayRef<Operation *>(op))
      for (OpOperand &use : reader->getOpOperands())
        if (Value v = resolve(use.get()); v != use.get())
          handles[use.get()] = handles.lookup(v);
    if (failed(lowerOp(op)) || abiMismatch)
      return failure();
    // An output nothing reads is released at once, so repeated calls do
    // not pile up tensors in the context.
    for (Value r : op->getResults())
      if (!lastUse.count(r) && !isResult(r) && !isa<ParamOp>(op))
        callVoid(WHALE_RT_FN(tensor_release), {ctxArg, handles.lookup(r)});
    // Release what this op was the last to read (never inputs, parameters or
    // the result, which the caller owns).
    // Clipping's results are its operands' tensors, released after their
    // own last use instead.
    // A started all-reduce's tensors live on through its wait's results;
    // the wait's operand is a request, not a tensor.
    for (Value v : isa<ClipGradNormOp, AllReduceOp, AllReduceStartOp,
                       AllReduceWaitOp>(op)
                       ? ValueRange{}
                       : op->getOperands()) {
      Value r = resolve(v);
      if (lastUse.lookup(r) != op || isResult(r) || isa<BlockArgument>(r) ||
          r.getDefiningOp<ParamOp>())
        continue;
      callVoid(WHALE_RT_FN(tensor_release), {ctxArg, handles.lookup(r)});
      lastUse.erase(r);
    }
  }
  for (auto [i, r] : llvm::enumerate(results)) {
    Value handle = handles.lookup(r);
    if (!handle)
      return fn.emitOpError("returns a value the lowering did not produce");
    Value at =
        LLVM::GEPOp::create(b, loc, ptr, ptr, resultOut,
                            ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
    LLVM::StoreOp::create(b, loc, handle, at);
  }
  LLVM::BrOp::create(b, loc, ValueRange{constI32(0)}, exit);
  fn.erase();
  return success();
}

struct WhaleToRuntimePass
    : public whale::impl::WhaleToRuntimeBase<WhaleToRuntimePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(inlineStepCalls(module)) || failed(wrapFormulaOps(module)))
      return signalPassFailure();
    SmallVector<func::FuncOp> models;
    module.walk([&](func::FuncOp fn) {
      if (fn->hasAttr("whale.model") || fn->hasAttr("whale.rank"))
        models.push_back(fn);
    });
    Lowering lowering(module, sites);
    for (func::FuncOp fn : models)
      if (failed(lowering.lower(fn)))
        return signalPassFailure();
    // The config and train blocks are for the driver; the lowered module
    // carries code only.
    module->removeAttr("whale.config");
  }
};

} // namespace

void whale::loadRuntimeLoweringDialects(MLIRContext &context) {
  context.getOrLoadDialect<LLVM::LLVMDialect>();
}

void whale::insertRuntimeLoweringDialects(DialectRegistry &registry) {
  registry.insert<LLVM::LLVMDialect>();
}
