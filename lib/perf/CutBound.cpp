//===- CutBound.cpp - the least time a planned cut allows -----------------===//

#include "lib/perf/CutBound.h"

#include "dialects/Whale/IR/ProductCosts.h"
#include "dialects/Whale/IR/TrainAttrs.h"
#include "dialects/Whale/IR/WhaleOps.h"
#include "dialects/Whale/Interfaces/CostOpInterface.h"
#include "dialects/Whale/Interfaces/GradientOpInterface.h"
#include "lowering/Plan.h"
#include "perfmodel/DeviceModel.h"
#include "sim/Collectives.h"
#include "sim/Extract.h"
#include "sim/Simulator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

#include <algorithm>

using namespace mlir;

namespace whale {
namespace {

/// Ops that differentiate (GradientOpInterface, declared on each op's own
/// definition) pass a result's gradient on to their float operands: a value
/// that depends on a trained parameter through them has a gradient the rank
/// program keeps. Integer results and operands (positions, ids, expert
/// choices) never carry one (isFloat below). Ops without the interface
/// (constants; communication and updates, which planning adds later) pass
/// none.
bool passesGradients(Operation *op) { return isa<GradientOpInterface>(op); }

bool isFloat(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

/// A backward product's cost as the simulator will read it from the op the
/// rank program builds (MatmulGradOp): the gradient of `operand` of the
/// product `forward` has the operand's shape and reads both factors and
/// the result's gradient.
perf::OpCost gradientCost(MatmulOp forward, const perf::OpCost &cost,
                          Value operand) {
  auto t = cast<RankedTensorType>(operand.getType());
  perf::OpCost c;
  c.bf16 = cost.bf16;
  c.flops = double(productFlops(forward.getLhs().getType(), forward.getType(),
                                forward.getTransposeLhs()));
  c.bytes = double(tensorBytes(forward.getLhs().getType()) +
                   tensorBytes(forward.getRhs().getType()) +
                   tensorBytes(forward.getType()) + tensorBytes(t));
  perf::setProductShape(c, t);
  return c;
}

/// Attention's backward (AttentionGradOp), one op for the three gradients,
/// at the forward's shapes: it reads q, k, v, the output and its gradient,
/// and writes the gradients of q, k and v.
perf::OpCost gradientCost(AttentionOp forward, const perf::OpCost &cost) {
  perf::OpCost c = cost;
  c.flops = double(attentionGradFlops(
      forward.getQuery().getType(), forward.getKey().getType(),
      forward.getCausal(), forward.getSequenceMajor()));
  const int64_t qkv = tensorBytes(forward.getQuery().getType()) +
                      tensorBytes(forward.getKey().getType()) +
                      tensorBytes(forward.getValue().getType());
  c.bytes = double(2 * qkv + 2 * tensorBytes(forward.getType()));
  c.attention.backward = true;
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
      const perf::DeviceModel &d = t.devices.front();
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

bool allEqual(std::optional<ArrayRef<int64_t>> a) {
  if (!a)
    return true;
  return std::adjacent_find(a->begin(), a->end(), std::not_equal_to<>()) ==
         a->end();
}

} // namespace

double cutBound(func::FuncOp model, const sim::Topology &topology) {
  if (topology.devices.empty())
    return 0;
  const perf::DeviceModel &device = topology.devices.front();
  const LeastCollective collective(topology);
  const ModelPlan plan = ModelPlan::of(model);
  if (!plan || !allEqual(plan.localBatches()) || !allEqual(plan.shardWeights()))
    return 0;
  const int64_t stages = plan.stages().value_or(1),
                chunks = plan.chunks().value_or(1);
  SmallVector<TaskGraphOp> graphs = plan::taskGraphs(model);
  if (stages < 1 || chunks < 1 || graphs.empty())
    return 0;
  // Where a stage's chunk stands in the pipeline: chunk 0 of every stage,
  // then chunk 1 of every stage, and so on.
  auto position = [&](int64_t s, int64_t c) { return c * stages + s; };
  const int64_t positions = stages * chunks;

  // Each stage's schedule, whose steps run one after another. Without a
  // pipeline the one stage has none: its micro-batches run forward and
  // backward in turn.
  std::vector<SmallVector<ScheduleStep>> schedule(stages);
  for (TaskGraphOp tg : graphs) {
    auto st = tg->getAttrOfType<IntegerAttr>("stage");
    if (!st || st.getInt() < 0 || st.getInt() >= stages)
      return 0;
    SmallVector<ScheduleStep> &steps = schedule[st.getInt()];
    if (auto attr = tg->getAttrOfType<ScheduleAttr>("schedule"))
      steps.assign(attr.getSteps().begin(), attr.getSteps().end());
    else if (stages == 1 && chunks == 1)
      for (int64_t j = 0; j < plan.microBatches().value_or(1); ++j) {
        steps.push_back(ScheduleStep::forward(j));
        steps.push_back(ScheduleStep::backwardOf(j));
      }
  }
  for (const SmallVector<ScheduleStep> &steps : schedule)
    if (steps.empty() || steps.front().backward || !steps.back().backward ||
        llvm::any_of(steps, [&](const ScheduleStep &step) {
          return step.chunk < 0 || step.chunk >= chunks;
        }))
      return 0;

  // Which values have a gradient the backward keeps, forward in program
  // order: trained parameters, values other stages send, and what depends
  // on them through ops that pass gradients on.
  llvm::DenseSet<Value> trained;
  auto source = [](Value v) { return plan::throughYields(v); };
  auto positionOf = [&](Operation *op) -> int64_t {
    auto tg = op->getParentOfType<TaskGraphOp>();
    auto c = tg->getAttrOfType<IntegerAttr>("chunk");
    return position(plan::stageOf(tg), c ? c.getInt() : 0);
  };
  // The positions each position reads from on other stages.
  std::vector<llvm::SmallDenseSet<int64_t, 4>> readsFrom(positions);
  std::vector<Operation *> ops;
  for (TaskGraphOp tg : graphs) {
    auto c = tg->getAttrOfType<IntegerAttr>("chunk");
    if (c && (c.getInt() < 0 || c.getInt() >= chunks))
      return 0;
    for (Operation &op : tg.getBody().front().without_terminator()) {
      ops.push_back(&op);
      const int64_t at = positionOf(&op), s = at % stages;
      bool any = false;
      for (Value operand : op.getOperands()) {
        Value v = source(operand);
        const int64_t from = plan::stageOf(v);
        if (from >= 0 && from != s) {
          const int64_t was = position(from, plan::chunkOf(v));
          if (was > at)
            return 0; // the planner refuses it; nothing to bound
          readsFrom[at].insert(was);
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
  for (Operation *op : ops) {
    const int64_t s = positionOf(op) % stages;
    for (Value operand : op->getOperands()) {
      Value v = source(operand);
      int64_t from = plan::stageOf(v);
      if (from >= 0 && from != s) {
        needed.insert(v);
        hasGradient.insert(v);
      }
    }
  }
  const bool bf16 = ampBf16(model);
  // Per position: the forward and backward share of one micro-batch.
  std::vector<double> forward(positions, 0), backward(positions, 0);
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
    const int64_t s = positionOf(op);
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
      // Its gradient gathers every rank's part: the whole, or (a part
      // several ranks hold) as many parts as ranks.
      const int64_t gathered =
          slice.getParts() ? tensorBytes(slice.getType()) * slice.getShards()
                           : tensorBytes(slice.getValue().getType());
      if (keeps(slice.getValue()))
        backward[s] +=
            collective(sim::Collective::AllGather, gathered, slice.getShards());
    } else if (auto product = dyn_cast<MatmulOp>(op)) {
      const perf::OpCost cost = perf::opCostOf(op, bf16);
      forward[s] += perf::opSeconds(cost, device);
      for (Value operand : op->getOperands())
        if (keeps(operand))
          backward[s] +=
              perf::opSeconds(gradientCost(product, cost, operand), device);
    } else if (auto attention = dyn_cast<AttentionOp>(op)) {
      const perf::OpCost cost = perf::opCostOf(op, bf16);
      forward[s] += perf::opSeconds(cost, device);
      if (llvm::any_of(op->getOperands(), keeps))
        backward[s] += perf::opSeconds(gradientCost(attention, cost), device);
    }
  }

  // The chains. A stage's first step waits for one forward of each
  // position on another stage it reads from, each run after that stage's
  // own first step began; then the stage runs every step of its schedule.
  // Its last step, a backward, waits for the gradients its readers send at
  // the end of theirs: where that backward is a reader's last step too,
  // the reader's end comes first. A stage receives a value, and sends its
  // gradient back, on the first of its chunks that reads it, so only steps
  // on chunk 0 are sure to (every schedule starts and ends a stage there).
  // Positions only read earlier ones, so the starts settle in the order of
  // the first steps' positions, the ends in the reverse order of the last
  // steps'.
  auto firstAt = [&](int64_t s) {
    return position(s, schedule[s].front().chunk);
  };
  auto lastAt = [&](int64_t s) {
    return position(s, schedule[s].back().chunk);
  };
  SmallVector<int64_t> order(stages);
  for (int64_t s = 0; s < stages; ++s)
    order[s] = s;
  std::vector<double> start(stages, 0), end(stages, 0);
  llvm::sort(order,
             [&](int64_t a, int64_t b) { return firstAt(a) < firstAt(b); });
  for (int64_t j : order)
    for (int64_t from : schedule[j].front().chunk == 0
                            ? readsFrom[firstAt(j)]
                            : llvm::SmallDenseSet<int64_t, 4>()) {
      const int64_t i = from % stages;
      if (firstAt(i) >= firstAt(j))
        return 0;
      start[j] = std::max(start[j], start[i] + forward[from]);
    }
  for (int64_t j = 0; j < stages; ++j) {
    end[j] = start[j];
    for (const ScheduleStep &step : schedule[j])
      end[j] += (step.backward ? backward : forward)[position(j, step.chunk)];
  }
  llvm::sort(order,
             [&](int64_t a, int64_t b) { return lastAt(a) > lastAt(b); });
  for (int64_t j : order) {
    const ScheduleStep &last = schedule[j].back();
    if (last.chunk != 0)
      continue;
    for (int64_t from : readsFrom[lastAt(j)]) {
      const int64_t i = from % stages;
      const ScheduleStep &theirs = schedule[i].back();
      if (position(i, theirs.chunk) == from &&
          theirs.microBatch == last.microBatch)
        end[i] = std::max(end[i], end[j] + backward[from]);
    }
  }
  return *std::max_element(end.begin(), end.end());
}

} // namespace whale
