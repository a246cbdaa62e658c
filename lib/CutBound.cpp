//===- CutBound.cpp - the least time a planned cut allows -----------------===//

#include "lib/CutBound.h"

#include "dialects/Whale/IR/TrainAttrs.h"
#include "dialects/Whale/IR/WhaleOps.h"
#include "dialects/Whale/Interfaces/CostOpInterface.h"
#include "lowering/Plan.h"
#include "sim/Collectives.h"
#include "sim/DeviceModel.h"
#include "sim/Extract.h"
#include "sim/Simulator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

#include <algorithm>

using namespace mlir;

namespace whale {
namespace {

/// Ops whose gradient reaches every float operand whenever their result
/// has one (a loss's labels and an embedding's ids are integers): a value
/// that depends on a trained parameter through them has a gradient the
/// rank program keeps. Others (routing, top-k) may stop it, so nothing is
/// assumed through them.
bool passesGradients(Operation *op) {
  return isa<MatmulOp, AddOp, SubOp, MulOp, DivOp, NegOp, ReluOp, GeluOp,
             TanhOp, ExpOp, LogOp, SqrtOp, CausalMaskOp, SoftmaxOp, AttentionOp,
             DropoutOp, LayerNormOp, EmbeddingOp, ReduceSumOp, ReduceMeanOp,
             ReshapeOp, TransposeOp, SliceOp, ConcatOp, AllGatherOp,
             ShardSliceOp, ShardSumOp, FanoutOp, AllToAllOp, CrossEntropyOp,
             ShardedCrossEntropyOp>(op);
}

bool isFloat(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

/// A backward product's cost as the simulator reads it from the op the
/// rank program will hold: the gradient of `operand` of the product
/// `forward` (MatmulGradOp) has the operand's shape and the forward's
/// FLOPs, and reads both factors and the result's gradient.
sim::OpCost gradientCost(MatmulOp forward, const sim::OpCost &cost,
                         Value operand) {
  auto t = cast<RankedTensorType>(operand.getType());
  ArrayRef<int64_t> shape = t.getShape();
  sim::OpCost c;
  c.matmul = true;
  c.bf16 = cost.bf16;
  c.flops = cost.flops;
  c.bytes = double(tensorBytes(forward.getLhs().getType()) +
                   tensorBytes(forward.getRhs().getType()) +
                   tensorBytes(forward.getType()) + tensorBytes(t));
  c.m = shape.size() >= 2 ? shape[shape.size() - 2] : 1;
  c.n = shape.empty() ? 1 : shape.back();
  for (size_t i = 0; i + 2 < shape.size(); ++i)
    c.batch *= shape[i];
  double elements = double(c.batch) * c.m * c.n;
  c.k = elements > 0 ? static_cast<int64_t>(c.flops / (2 * elements)) : 0;
  return c;
}

/// Attention's backward (AttentionGradOp), one op for the three gradients:
/// the scores again, then dv, dP, dq and dk, at (10 E + 8) FLOPs a pair
/// where the forward takes 4 E + 5 (WhaleCost.cpp), at the forward's
/// shapes; it reads q, k, v, the output and its gradient, and writes the
/// gradients of q, k and v.
sim::OpCost gradientCost(AttentionOp forward, const sim::OpCost &cost) {
  sim::OpCost c = cost;
  const double e = double(cost.k);
  c.flops = cost.flops * (10 * e + 8) / (4 * e + 5);
  const int64_t qkv = tensorBytes(forward.getQuery().getType()) +
                      tensorBytes(forward.getKey().getType()) +
                      tensorBytes(forward.getValue().getType());
  c.bytes = double(2 * qkv + 2 * tensorBytes(forward.getType()));
  return c;
}

/// The least a collective of `bytes` over `ranks` of a shard group can
/// take: the replay times it over the group's link (the intra-node one, or
/// the inter-node one where the group spans nodes) by the faster algorithm,
/// so the least over both links and algorithms.
class LeastCollective {
public:
  explicit LeastCollective(const sim::Topology &t) {
    if (t.interNode.bandwidth > 0)
      links.push_back(t.interNode);
    sim::Link intra = t.intraNode;
    if (intra.bandwidth <= 0 && !t.devices.empty()) {
      // What the replay falls back on without a declared link (devices
      // alike): the GPUs' data-sheet link, or copies in memory.
      const sim::DeviceModel &d = t.devices.front();
      intra.bandwidth = d.gpu ? d.nodeLinkBandwidth : d.memoryBandwidth;
      if (intra.latency <= 0)
        intra.latency = d.nodeLinkLatency;
    }
    if (intra.bandwidth > 0)
      links.push_back(intra);
  }
  double operator()(sim::Collective c, int64_t bytes, int64_t ranks) const {
    double least = 0;
    bool any = false;
    for (const sim::Link &link : links)
      for (sim::Algorithm a : {sim::Algorithm::Ring, sim::Algorithm::Tree}) {
        double t = sim::collectiveSeconds(c, a, double(bytes), ranks, link);
        least = any ? std::min(least, t) : t;
        any = true;
      }
    return least;
  }

private:
  SmallVector<sim::Link, 2> links;
};

bool allEqual(DictionaryAttr plan, StringRef key) {
  auto a = plan.getAs<DenseI64ArrayAttr>(key);
  if (!a)
    return true;
  ArrayRef<int64_t> v = a.asArrayRef();
  return std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) ==
         v.end();
}

} // namespace

double cutBound(func::FuncOp model, const sim::Topology &topology) {
  if (topology.devices.empty())
    return 0;
  const sim::DeviceModel &device = topology.devices.front();
  const LeastCollective collective(topology);
  DictionaryAttr plan = plan::planOf(model);
  if (!plan || plan::intOf(plan, "chunks", 1) != 1 ||
      !allEqual(plan, "local_batches") || !allEqual(plan, "shard_weights"))
    return 0;
  const int64_t stages = plan::intOf(plan, "stages", 1);
  SmallVector<TaskGraphOp> graphs = plan::taskGraphs(model);
  if (stages < 1 || graphs.empty())
    return 0;

  // Every stage runs its micro-batches' forwards and backwards in turn and
  // ends on the backward of the same micro-batch.
  // Without a pipeline the one stage has no schedule: its micro-batches
  // run forward and backward in turn.
  int64_t micro = -1, last = -1;
  for (TaskGraphOp tg : graphs) {
    auto schedule = tg->getAttrOfType<ScheduleAttr>("schedule");
    if (!schedule && stages == 1) {
      micro = plan::intOf(plan, "micro_batches", 1);
      continue;
    }
    if (!schedule || schedule.getSteps().empty())
      return 0;
    ArrayRef<ScheduleStep> steps = schedule.getSteps();
    int64_t forwards = llvm::count_if(
        steps, [](const ScheduleStep &s) { return !s.backward; });
    if (!steps.back().backward || (micro >= 0 && forwards != micro) ||
        (last >= 0 && steps.back().microBatch != last))
      return 0;
    micro = forwards;
    last = steps.back().microBatch;
  }

  // Which values have a gradient the backward keeps, forward in program
  // order: trained parameters, values other stages send, and what depends
  // on them through ops that pass gradients on.
  llvm::DenseSet<Value> trained;
  auto source = [](Value v) { return plan::throughYields(v); };
  auto stageOfOp = [](Operation *op) -> int64_t {
    auto tg = op->getParentOfType<TaskGraphOp>();
    auto s = tg ? tg->getAttrOfType<IntegerAttr>("stage") : IntegerAttr();
    return s ? s.getInt() : -1;
  };
  // Which stages each stage reads from.
  std::vector<llvm::SmallDenseSet<int64_t, 4>> readsFrom(stages);
  std::vector<Operation *> ops;
  for (TaskGraphOp tg : graphs)
    for (Operation &op : tg.getBody().front().without_terminator()) {
      ops.push_back(&op);
      const int64_t s = stageOfOp(&op);
      if (s < 0 || s >= stages)
        return 0;
      bool any = false;
      for (Value operand : op.getOperands()) {
        Value v = source(operand);
        int64_t from = plan::stageOf(v);
        if (from > s)
          return 0; // the planner refuses it; nothing to bound
        if (from >= 0 && from != s) {
          readsFrom[s].insert(from);
          if (isFloat(v))
            trained.insert(v); // its gradient goes back to its stage
        }
        any = any || trained.contains(v);
      }
      if (auto p = dyn_cast<ParamOp>(op)) {
        if (!p.getFrozen())
          trained.insert(p.getResult());
      } else if (any && passesGradients(&op)) {
        for (Value r : op.getResults())
          if (isFloat(r))
            trained.insert(r);
      }
    }

  // Backward in program order: which ops the rank program keeps (what the
  // loss and the values later stages read need), and which values receive
  // a gradient (the loss, the values later stages read, whose gradients
  // come back, and the operands of ops that pass gradients on from a
  // result that has one).
  llvm::DenseSet<Value> needed, hasGradient;
  auto ret = cast<func::ReturnOp>(model.getBody().front().getTerminator());
  needed.insert(source(ret.getOperand(0)));
  hasGradient.insert(source(ret.getOperand(0)));
  for (Operation *op : ops)
    for (Value operand : op->getOperands()) {
      Value v = source(operand);
      int64_t from = plan::stageOf(v);
      if (from >= 0 && from != stageOfOp(op)) {
        needed.insert(v);
        hasGradient.insert(v);
      }
    }
  const bool bf16 = ampBf16(model);
  std::vector<double> forward(stages, 0), backward(stages, 0);
  for (Operation *op : llvm::reverse(ops)) {
    auto any = [&](const llvm::DenseSet<Value> &set) {
      return llvm::any_of(op->getResults(),
                          [&](Value r) { return set.contains(r); });
    };
    if (!any(needed))
      continue; // dead: the rank program drops it
    for (Value operand : op->getOperands())
      needed.insert(source(operand));
    // Its backward runs where its result has a gradient; an operand's
    // part of it where the operand's gradient is kept.
    const bool backwardRuns = passesGradients(op) && any(hasGradient);
    if (backwardRuns)
      for (Value operand : op->getOperands())
        if (isFloat(operand))
          hasGradient.insert(source(operand));
    auto keeps = [&](Value operand) {
      return backwardRuns && trained.contains(source(operand));
    };
    const int64_t s = stageOfOp(op);
    // The shard group's collectives, which the rank waits in.
    if (auto sum = dyn_cast<ShardSumOp>(op)) {
      // Its gradient is the gradient as it is.
      forward[s] += collective(sim::Collective::AllReduce,
                               tensorBytes(sum.getType()), sum.getShards());
    } else if (auto gather = dyn_cast<AllGatherOp>(op)) {
      // Its gradient is this rank's slice of the gradient.
      forward[s] +=
          collective(sim::Collective::AllGather, tensorBytes(gather.getType()),
                     gather.getShards());
    } else if (auto a2a = dyn_cast<AllToAllOp>(op)) {
      forward[s] += collective(sim::Collective::AllToAll,
                               tensorBytes(a2a.getType()), a2a.getShards());
      if (keeps(a2a.getValue()))
        backward[s] +=
            collective(sim::Collective::AllToAll,
                       tensorBytes(a2a.getValue().getType()), a2a.getShards());
    } else if (auto fanout = dyn_cast<FanoutOp>(op)) {
      if (keeps(fanout.getValue()))
        backward[s] +=
            collective(sim::Collective::AllReduce,
                       tensorBytes(fanout.getType()), fanout.getShards());
    } else if (auto slice = dyn_cast<ShardSliceOp>(op)) {
      if (keeps(slice.getValue()))
        backward[s] += collective(sim::Collective::AllGather,
                                  tensorBytes(slice.getValue().getType()),
                                  slice.getShards());
    } else if (auto product = dyn_cast<MatmulOp>(op)) {
      const sim::OpCost cost = sim::opCostOf(op, bf16);
      forward[s] += sim::opSeconds(cost, device);
      for (Value operand : op->getOperands())
        if (keeps(operand))
          backward[s] +=
              sim::opSeconds(gradientCost(product, cost, operand), device);
    } else if (auto attention = dyn_cast<AttentionOp>(op)) {
      const sim::OpCost cost = sim::opCostOf(op, bf16);
      forward[s] += sim::opSeconds(cost, device);
      if (llvm::any_of(op->getOperands(), keeps))
        backward[s] += sim::opSeconds(gradientCost(attention, cost), device);
    }
  }

  // The chains: the first forward passes the stages down, the last
  // backward passes them back up.
  std::vector<double> start(stages, 0), end(stages, 0);
  for (int64_t j = 0; j < stages; ++j)
    for (int64_t i : readsFrom[j])
      start[j] = std::max(start[j], start[i] + forward[i]);
  for (int64_t j = 0; j < stages; ++j)
    end[j] = start[j] + double(micro) * (forward[j] + backward[j]);
  for (int64_t j = stages - 1; j >= 0; --j)
    for (int64_t i : readsFrom[j])
      end[i] = std::max(end[i], end[j] + backward[i]);
  return *std::max_element(end.begin(), end.end());
}

} // namespace whale
