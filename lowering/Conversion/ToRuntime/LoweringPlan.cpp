//===- LoweringPlan.cpp - the whole-function decisions of the lowering ---===//

#include "lowering/Conversion/ToRuntime/LoweringPlan.h"

#include "lowering/Conversion/ToRuntime/LoweringOrder.h"
#include "lowering/Passes.h"

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/ElementTypes.h"
#include "lowering/Transforms/Fusion/ElementProgramBuilder.h"
#include "lowering/Transforms/Precision/Bf16Kernels.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace whale;

LoweringPlan::LoweringPlan(ModuleOp module, bool sites)
    : module(module), sites(sites) {}

/// bf16 is storage (amp): an op takes it only where the runtime has a bf16
/// kernel for it (lowering/Transforms/Precision/Bf16Kernels.h). Refused here,
/// where the op and its line are known, rather than by the runtime when the
/// step runs.
static LogicalResult checkReachesRuntime(Operation *op) {
  if (auto p = dyn_cast<ParamOp>(op)) {
    if (!p.getType().getElementType().isF32())
      return p.emitOpError("the CPU runtime keeps f32 parameters only");
    return success();
  }
  if (!runsOnBf16(op) && (llvm::any_of(op->getOperandTypes(), isBf16Tensor) ||
                          llvm::any_of(op->getResultTypes(), isBf16Tensor)))
    return op->emitOpError("computes in f32 on the runtime; a bf16 value "
                           "reaches it only through whale.cast");
  for (Type t : op->getResultTypes()) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    if (!tensor)
      continue;
    Type e = tensor.getElementType();
    if (!e.isF32() && !e.isF64() && !e.isInteger(32) && !e.isInteger(64) &&
        !e.isBF16())
      return emitError(op->getLoc())
             << "the CPU runtime has no " << e << " tensors yet";
  }
  return success();
}

/// The parameters `op` writes in the store: an update's, a broadcast's,
/// batch normalization's running statistics.
static SmallVector<Value, 2> parametersWritten(Operation *op) {
  if (auto u = dyn_cast<SgdUpdateOp>(op))
    return {u.getParam()};
  if (auto u = dyn_cast<AdamUpdateOp>(op))
    return {u.getParam()};
  if (auto b = dyn_cast<BroadcastOp>(op))
    return SmallVector<Value, 2>(b.getParams());
  if (auto bn = dyn_cast<BatchNormOp>(op))
    return {bn.getRunningMean(), bn.getRunningVar()};
  return {};
}

/// A parameter's value in the IR is the step's starting one, and -cse
/// merges its readers on that understanding; the runtime's tensor is the
/// store, which an update overwrites. So nothing but another writer of the
/// store may read a parameter once it was written: refused here rather
/// than run on the new values.
static LogicalResult
checkParameterReads(ArrayRef<Operation *> ops,
                    llvm::function_ref<Value(Value)> resolve) {
  DenseMap<Value, Operation *> writer;
  for (Operation *op : ops) {
    SmallVector<Value, 2> written = parametersWritten(op);
    if (written.empty())
      for (Value v : op->getOperands())
        if (Operation *w = writer.lookup(resolve(v))) {
          Value r = resolve(v);
          auto p = r.getDefiningOp<ParamOp>();
          InFlightDiagnostic d = op->emitOpError("reads parameter '")
                                 << (p ? p.getName() : StringRef("?"))
                                 << "' after the step wrote it";
          d.attachNote(w->getLoc()) << "written here";
          return d;
        }
    for (Value v : written)
      writer[resolve(v)] = op;
  }
  return success();
}

LogicalResult LoweringPlan::add(func::FuncOp fn) {
  const LoweringOrder order(fn);
  ArrayRef<Operation *> ops = order.ops;
  for (Operation *op : ops)
    if (failed(checkReachesRuntime(op)))
      return failure();
  auto resolve = [&](Value v) { return order.resolve(v); };
  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  if (ret.getNumOperands() < 1)
    return fn.emitOpError("a model returns at least one value");
  SmallVector<Value> results;
  for (Value v : ret.getOperands())
    results.push_back(resolve(v));
  auto isResult = [&](Value v) { return llvm::is_contained(results, v); };

  if (failed(checkParameterReads(ops, resolve)))
    return failure();

  // The last op to read each value, so its tensor is released right after.
  DenseMap<Value, Operation *> lastUse = order.lastUses();

  // A reshape moves no bytes (the cost model's view) where nothing reads
  // its input after it: it takes the input's memory. Not the memory of an
  // input, a parameter or a result (the caller's), nor of a tensor an
  // op wrote in place (clipping's, a collective's: their handles are
  // their operands').
  // (A wait's results are its start's operands' tensors too; a gather's
  // wait reads a request, not a tensor.)
  auto writesInPlace = [](Operation *op) {
    return writesOperandsInPlace(op) ||
           isa<AllReduceWaitOp, GatherParamsWaitOp>(op);
  };
  for (Operation *op : ops) {
    if (!isa<ReshapeOp>(op))
      continue;
    Value r = resolve(op->getOperand(0));
    Operation *def = r.getDefiningOp();
    if (lastUse.lookup(r) == op && !isResult(r) && def && !isa<ParamOp>(def) &&
        !writesInPlace(def))
      reshapesTaking.insert(op);
  }

  for (Operation *op : ops) {
    Releases mine;
    // An output nothing reads is released at once, so repeated calls do
    // not pile up tensors in the context.
    if (!isa<ParamOp>(op))
      for (OpResult r : op->getResults())
        if (!lastUse.count(r) && !isResult(r))
          mine.results.push_back(r.getResultNumber());
    // What this op was the last to read (never inputs, parameters or the
    // results, which the caller owns). Clipping's and a collective's
    // results are their operands' tensors, released after their own last
    // use instead; a wait's operand is a request, not a tensor. An addition
    // into owners' sums writes its sums in place and consumes its
    // gradients, which it releases.
    auto addInto = dyn_cast<AddIntoOwnersOp>(op);
    if (!writesInPlace(op) || addInto)
      for (OpOperand &use : op->getOpOperands()) {
        if (addInto && use.getOperandNumber() >= addInto.getGrads().size())
          continue;
        Value r = resolve(use.get());
        if (lastUse.lookup(r) != op || isResult(r) || isa<BlockArgument>(r) ||
            r.getDefiningOp<ParamOp>())
          continue;
        mine.operands.push_back(use.getOperandNumber());
        lastUse.erase(r); // once, though read twice
      }
    if (!mine.results.empty() || !mine.operands.empty())
      releases[op] = std::move(mine);
    if (isa<FusedOp>(op))
      buildKernel(op);
  }

  findAdamRuns(ops);
  if (sites)
    for (auto [i, op] : llvm::enumerate(fn.getBody().front()))
      site[&op] = static_cast<int64_t>(i);
  return success();
}

const Releases &LoweringPlan::releasesOf(Operation *op) const {
  static const Releases none;
  auto at = releases.find(op);
  return at == releases.end() ? none : at->second;
}

ArrayRef<Operation *> LoweringPlan::adamRunAt(Operation *op) const {
  auto at = adamRuns.find(op);
  return at == adamRuns.end() ? ArrayRef<Operation *>() : at->second;
}

std::optional<int64_t> LoweringPlan::siteOf(Operation *op) const {
  auto at = site.find(op);
  if (at == site.end())
    return std::nullopt;
  return at->second;
}

/// Runs of consecutive Adam updates that one call can make: the same
/// hyperparameters and the same group (owners may differ), each run keyed
/// by its first update. With `sites` every update is a run of its own: a
/// profile times each op at its site, and the simulator prices each update
/// as its own event.
void LoweringPlan::findAdamRuns(ArrayRef<Operation *> ops) {
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

ModuleOp LoweringPlan::kernelModule() {
  if (!kernels) {
    auto b = OpBuilder::atBlockEnd(module.getBody());
    kernels = ModuleOp::create(b, module.getLoc(), kKernelModule);
  }
  return kernels;
}

void LoweringPlan::buildKernel(Operation *op) {
  auto fused = cast<FusedOp>(op);
  std::string key;
  llvm::raw_string_ostream keyOs(key);
  keyOs << fused.getBodySignature() << " : ";
  llvm::interleaveComma(fused.getInputs().getTypes(), keyOs);
  keyOs << " -> ";
  llvm::interleaveComma(fused.getResultTypes(), keyOs);
  auto [it, added] = kernelByKey.try_emplace(key);
  if (added) {
    FusedCode &code = it->second;
    code.name = "__whale_fused_" + std::to_string(kernelByKey.size() - 1);
    code.launch = buildFusedKernel(fused, kernelModule(), code.name);
    std::string why;
    code.program = buildFusedProgram(fused, why);
  }
  fusedCode[op] = &it->second;
}
