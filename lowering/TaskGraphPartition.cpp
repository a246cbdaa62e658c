//===- TaskGraphPartition.cpp - -whale-taskgraph-partition ----------------===//
//
// Every op of a model ends up in a TaskGraph. Ops the script left outside any
// block join a TaskGraph of the model's default strategy, one per run of
// such ops. With auto_parallel, the model is cut afresh into num_task_graph
// contiguous TaskGraphs of near-equal FLOPs (from the cost interface), each
// parameter going with its first user.
//
//===----------------------------------------------------------------------===//

#include "lowering/ClusterView.h"
#include "lowering/Passes.h"
#include "lowering/Plan.h"

#include "llvm/ADT/SetVector.h"

namespace whale {
#define GEN_PASS_DEF_WHALETASKGRAPHPARTITION
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

/// Moves `ops` (contiguous, in order) into a new TaskGraph in their place;
/// values used after them leave through its yield.
TaskGraphOp wrap(OpBuilder &b, ArrayRef<Operation *> ops, Strategy strategy,
                 IntegerAttr devices) {
  llvm::SmallPtrSet<Operation *, 32> inside(ops.begin(), ops.end());
  llvm::SetVector<Value> escaping;
  for (Operation *op : ops)
    for (Value r : op->getResults())
      for (OpOperand &use : r.getUses())
        if (!inside.contains(use.getOwner()))
          escaping.insert(r);
  b.setInsertionPoint(ops.front());
  SmallVector<Type> types;
  for (Value v : escaping)
    types.push_back(v.getType());
  auto tg = TaskGraphOp::create(b, ops.front()->getLoc(), types,
                                StrategyAttr::get(b.getContext(), strategy),
                                devices);
  Block *body = new Block();
  tg.getBody().push_back(body);
  for (Operation *op : ops)
    op->moveBefore(body, body->end());
  b.setInsertionPointToEnd(body);
  YieldOp::create(b, tg.getLoc(), escaping.getArrayRef());
  for (auto [escaped, r] : llvm::zip(escaping, tg.getResults())) {
    Value v = escaped;
    v.replaceUsesWithIf(r, [&](OpOperand &use) {
      return !tg->isProperAncestor(use.getOwner());
    });
  }
  return tg;
}

/// The rate stage i of a k-stage cut will run at: with a `whale.cluster`
/// of k x copies devices, -whale-balance hands each copy's devices to the
/// stages in order of memory, most first; a stage is as fast as its slowest
/// copy. All 1 without a cluster.
SmallVector<double> stageRates(func::FuncOp fn, int64_t k) {
  SmallVector<double> rates(k, 1.0);
  auto module = fn->getParentOfType<ModuleOp>();
  auto dict = module ? module->getAttrOfType<DictionaryAttr>("whale.cluster")
                     : DictionaryAttr();
  auto flops = dict ? dict.getAs<DenseF64ArrayAttr>("flops")
                    : DenseF64ArrayAttr();
  if (!flops || flops.size() % k != 0)
    return rates;
  plan::ClusterView cluster = plan::clusterOf(fn, flops.size());
  rates.assign(k, std::numeric_limits<double>::infinity());
  for (int64_t copy = 0; copy < flops.size() / k; ++copy) {
    SmallVector<int64_t> devs;
    for (int64_t i = 0; i < k; ++i)
      devs.push_back(copy * k + i);
    std::stable_sort(devs.begin(), devs.end(), [&](int64_t a, int64_t b) {
      return cluster.room(a) > cluster.room(b);
    });
    for (int64_t i = 0; i < k; ++i)
      rates[i] = std::min(rates[i], cluster.rate(devs[i]));
  }
  return rates;
}

int64_t flopsOf(Operation *op) {
  auto cost = dyn_cast<CostOpInterface>(op);
  return cost ? cost.getFlops() : 0;
}

struct TaskGraphPartitionPass
    : public whale::impl::WhaleTaskGraphPartitionBase<TaskGraphPartitionPass> {
  using Base::Base;

  LogicalResult wrapLooseOps(func::FuncOp fn, OpBuilder &b) {
    Strategy strategy = Strategy::replicate;
    if (auto s = fn->getAttrOfType<StrategyAttr>("whale.default_strategy"))
      strategy = s.getValue();
    auto devices = fn->getAttrOfType<IntegerAttr>("whale.default_devices");
    SmallVector<SmallVector<Operation *>> runs(1);
    for (Operation &op : fn.getBody().front().without_terminator()) {
      if (isa<TaskGraphOp>(op)) {
        if (!runs.back().empty())
          runs.emplace_back();
        continue;
      }
      runs.back().push_back(&op);
    }
    for (auto &run : runs)
      if (!run.empty())
        wrap(b, run, strategy, devices);
    return success();
  }

  LogicalResult cutByFlops(func::FuncOp fn, OpBuilder &b, int64_t k) {
    inlineTaskGraphs(fn);
    Block &entry = fn.getBody().front();
    SmallVector<Operation *> compute;
    for (Operation &op : entry.without_terminator())
      if (!isa<ParamOp>(op))
        compute.push_back(&op);
    if (static_cast<int64_t>(compute.size()) < k)
      return fn.emitOpError("cannot be cut into ")
             << k << " TaskGraphs: it has only " << compute.size() << " ops";
    // Part i ends where the running FLOPs come closest to the share of the
    // devices up to stage i, leaving at least one op for each part: equal
    // shares on equal devices, so each stage takes the same time on its own.
    SmallVector<double> share = stageRates(fn, k);
    double rateSum = 0;
    for (double r : share)
      rateSum += r;
    SmallVector<int64_t> prefix = {0};
    for (Operation *op : compute)
      prefix.push_back(prefix.back() + flopsOf(op));
    SmallVector<size_t> ends;
    double before = 0;
    for (int64_t part = 1; part < k; ++part) {
      before += share[part - 1];
      double target = static_cast<double>(prefix.back()) * before / rateSum;
      size_t lo = ends.empty() ? 1 : ends.back() + 1;
      size_t hi = compute.size() - (k - part);
      size_t best = lo;
      for (size_t end = lo; end <= hi; ++end)
        if (std::abs(prefix[end] - target) < std::abs(prefix[best] - target))
          best = end;
      ends.push_back(best);
    }
    ends.push_back(compute.size());
    // Parameters go just before their first user, so each part holds its
    // own. Collected first: params sharing a user (a layernorm's scale and
    // shift) would otherwise keep trading places under the iteration.
    SmallVector<ParamOp> params(entry.getOps<ParamOp>());
    for (ParamOp p : params) {
      Operation *first = nullptr;
      for (Operation *user : p->getUsers())
        if (!first || user->isBeforeInBlock(first))
          first = user;
      if (first)
        p->moveBefore(first);
    }
    size_t begin = 0;
    for (size_t end : ends) {
      SmallVector<Operation *> part;
      Operation *from = compute[begin];
      // Parameters placed right before the part's first op belong to it.
      while (from->getPrevNode() && isa<ParamOp>(from->getPrevNode()))
        from = from->getPrevNode();
      for (Operation *op = from; op != compute[end - 1]->getNextNode();
           op = op->getNextNode())
        part.push_back(op);
      wrap(b, part, Strategy::replicate, IntegerAttr());
      begin = end;
    }
    return success();
  }

  void runOnOperation() override {
    OpBuilder b(&getContext());
    bool ok = plan::forEachModel(getOperation(), [&](func::FuncOp fn) {
      bool automatic = autoParallel;
      int64_t k = numTaskGraph;
      if (auto a = dyn_cast_or_null<BoolAttr>(
              plan::configValue(fn, "auto_parallel")))
        automatic = automatic || a.getValue();
      if (auto n = dyn_cast_or_null<IntegerAttr>(
              plan::configValue(fn, "num_task_graph"));
          n && k == 0)
        k = n.getInt();
      return automatic && k > 0 ? cutByFlops(fn, b, k) : wrapLooseOps(fn, b);
    });
    if (!ok)
      signalPassFailure();
  }
};

} // namespace
