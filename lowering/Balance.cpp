//===- Balance.cpp - -whale-balance ---------------------------------------===//
//
// Gives each device a share of the work that fits its speed and its memory,
// so no fast device waits for a slow one at the gradient all-reduce:
//
//  1. Pipeline stages go to devices in order of memory, most first: under
//     1F1B stage s holds up to p - s micro-batches of activations, so the
//     early stages need the most.
//  2. Each replica's local batch is proportional to its speed (its time per
//     sample is its slowest stage's), then devices over their memory shed
//     samples (the Whale paper's Algorithm 1): the most overloaded device
//     gives to the device with room whose load per unit of speed is lowest,
//     the largest amount that keeps the receiver within its memory, until
//     no device is over or none has room. The global batch never changes.
//     Replicas of one shard group compute on the same rows, so they take
//     one share together.
//  3. Every device's predicted compute time and peak memory is recorded;
//     a plan that cannot fit fails here, naming the device, the TaskGraph
//     and the bytes.
//
// Costs come from the cost interface at the batch the model is elaborated
// at, scaled per sample: a step is about three forward passes of FLOPs
// (forward, and backward's two products per matmul), and a stage holds its
// parameters, their gradients, the optimizer state and its in-flight
// micro-batches' activations.
//
// `even` keeps equal shares (and only checks memory); `local-batches`
// fixes the shares (the planner's later runs, at each micro-batch, reuse
// the first run's).
//
//===----------------------------------------------------------------------===//

#include "lowering/ClusterView.h"
#include "lowering/Passes.h"
#include "lowering/Plan.h"

#include "lib/Attrs.h"

#include <cmath>
#include <numeric>

namespace whale {
#define GEN_PASS_DEF_WHALEBALANCE
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

/// FLOPs of a training step per FLOP of its forward pass.
constexpr double kStepFlopsPerForward = 3.0;

/// What one device of a stage needs, per sample of its local batch.
struct StageCost {
  TaskGraphOp first;         ///< where its diagnostics point
  int64_t fixedBytes = 0;    ///< parameters, gradients, optimizer state
  double actPerSample = 0;   ///< bytes of forward outputs per sample
  double flopsPerSample = 0; ///< forward FLOPs per sample
  int64_t inFlight = 1;      ///< micro-batches whose activations it holds
};

class Balancer {
public:
  Balancer(func::FuncOp fn, OpBuilder &b, bool even,
           ArrayRef<int64_t> forced)
      : fn(fn), b(b), even(even), forced(forced) {}
  LogicalResult run();

private:
  func::FuncOp fn;
  OpBuilder &b;
  bool even;
  ArrayRef<int64_t> forced;
  plan::ClusterView cluster;
  int64_t devices = 1, stages = 1, replicas = 1, m = 1, batch = 0, group = 1;
  SmallVector<int64_t> grid;
  SmallVector<StageCost> costs;

  int64_t deviceOf(int64_t s, int64_t r) const { return grid[s * replicas + r]; }
  /// In-flight activations, plus about one micro-batch's worth for the
  /// gradients backward makes of them: an upper estimate (docs/balancing.md
  /// compares it with the allocator's measured peaks).
  double bytesAt(int64_t s, int64_t micro) const {
    const StageCost &c = costs[s];
    return c.fixedBytes + double(c.inFlight + 1) * c.actPerSample * micro;
  }
  LogicalResult measureStages();
  void orderStagesByMemory();
  LogicalResult shares(SmallVector<int64_t> &units,
                       SmallVector<Attribute> &shifts);
  LogicalResult overMemory(int64_t s, int64_t r, int64_t micro,
                           StringRef advice);
};

LogicalResult Balancer::measureStages() {
  auto args = fn.getArgumentTypes();
  auto first = args.empty() ? RankedTensorType()
                            : dyn_cast<RankedTensorType>(args.front());
  if (!first || first.getRank() == 0 || first.getShape()[0] < 1)
    return fn.emitOpError("has no batch dimension to balance");
  const double elaborated = double(first.getShape()[0]);
  int states = 0;
  if (auto train = fn->getAttrOfType<DictionaryAttr>("whale.train"))
    states = optimizerStateCount(train.getAs<DictionaryAttr>("optimizer"));
  std::string kind = "1f1b";
  if (auto s = plan::planOf(fn).getAs<StringAttr>("schedule"))
    kind = s.str();
  costs.assign(stages, StageCost{});
  for (TaskGraphOp tg : plan::taskGraphs(fn)) {
    int64_t s = tg->getAttrOfType<IntegerAttr>("stage").getInt();
    auto shardAttr = tg->getAttrOfType<IntegerAttr>("shards");
    double parts = shardAttr ? double(shardAttr.getInt()) : 1.0;
    StageCost &c = costs[s];
    if (!c.first)
      c.first = tg;
    for (Operation &op : tg.getBody().front().without_terminator()) {
      if (auto p = dyn_cast<ParamOp>(op)) {
        c.fixedBytes += static_cast<int64_t>(
            std::ceil(tensorBytes(p.getType()) * (2 + states) / parts));
        continue;
      }
      if (auto cost = dyn_cast<CostOpInterface>(op)) {
        c.flopsPerSample += cost.getFlops() / parts / elaborated;
        c.actPerSample += cost.getOutputMemory() / parts / elaborated;
      }
    }
    c.inFlight = stages == 1 ? 1
                 : kind == "gpipe" ? m
                                   : std::min<int64_t>(stages - s, m);
  }
  return success();
}

/// Within each copy of the model, the stages' device blocks are handed out
/// again, the block with the most memory to stage 0.
void Balancer::orderStagesByMemory() {
  if (stages == 1)
    return;
  SmallVector<TaskGraphOp> tgs = plan::taskGraphs(fn);
  int64_t block = tgs.front().getDevices().value_or(1);
  if (replicas % block != 0)
    return;
  for (int64_t copy = 0; copy < replicas / block; ++copy) {
    auto roomOf = [&](int64_t s) {
      double room = std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < block; ++j)
        room = std::min(room, cluster.room(deviceOf(s, copy * block + j)));
      return room;
    };
    SmallVector<int64_t> order(stages);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
      return roomOf(x) > roomOf(y);
    });
    SmallVector<int64_t> old(grid);
    for (int64_t s = 0; s < stages; ++s)
      for (int64_t j = 0; j < block; ++j)
        grid[s * replicas + copy * block + j] =
            old[order[s] * replicas + copy * block + j];
  }
  for (TaskGraphOp tg : tgs) {
    int64_t s = tg->getAttrOfType<IntegerAttr>("stage").getInt();
    tg->setAttr("virtual_device",
                b.getDenseI64ArrayAttr(ArrayRef<int64_t>(grid).slice(
                    s * replicas, replicas)));
  }
}

LogicalResult Balancer::overMemory(int64_t s, int64_t r, int64_t micro,
                                   StringRef advice) {
  StageCost &c = costs[s];
  int64_t d = deviceOf(s, r);
  if (micro == 0)
    return c.first.emitOpError("does not fit on device ")
           << d << ": its parameters, gradients and optimizer state need "
           << c.fixedBytes << " bytes, over the device's limit of "
           << cluster.limit(d) << " bytes" << advice;
  int64_t act = static_cast<int64_t>(
      std::ceil(double(c.inFlight + 1) * c.actPerSample * micro));
  return c.first.emitOpError("does not fit on device ")
         << d << ": it needs " << c.fixedBytes + act << " bytes ("
         << c.fixedBytes << " for parameters, gradients and optimizer state, "
         << act << " for activations: " << c.inFlight << " micro-batch"
         << (c.inFlight == 1 ? "" : "es") << " of " << micro
         << " samples in flight and their gradients), over the device's "
         << "limit of " << cluster.limit(d) << " bytes" << advice;
}

/// Samples per replica, in units of m (one sample per micro-batch): every
/// replica of a shard group gets the same.
LogicalResult Balancer::shares(SmallVector<int64_t> &units,
                               SmallVector<Attribute> &shifts) {
  const int64_t groups = replicas / group;
  if (batch % (group * m) != 0)
    return fn.emitOpError("the global batch of ")
           << batch << " cannot be cut into micro-batches of whole samples "
           << "for shard groups of " << group << " x " << m
           << " micro-batches: use a multiple of " << group * m;
  const int64_t total = batch / (group * m);
  if (total < groups)
    return fn.emitOpError("the global batch of ")
           << batch << " is too small to give each of " << groups
           << " replicas at least " << m << " samples";

  // Per group: time per sample on its slowest device, and how many units
  // fit in memory on every device it uses.
  SmallVector<double> rate(groups), cap(groups);
  for (int64_t j = 0; j < groups; ++j) {
    double worst = 0;
    cap[j] = std::numeric_limits<double>::infinity();
    for (int64_t r = j * group; r < (j + 1) * group; ++r)
      for (int64_t s = 0; s < stages; ++s) {
        int64_t d = deviceOf(s, r);
        worst = std::max(worst, kStepFlopsPerForward *
                                    costs[s].flopsPerSample / cluster.rate(d));
        double room = cluster.room(d) - costs[s].fixedBytes;
        if (room < 0)
          return overMemory(s, r, 0, "");
        double perUnit = (costs[s].inFlight + 1) * costs[s].actPerSample;
        if (perUnit > 0)
          cap[j] = std::min(cap[j], std::floor(room / perUnit));
      }
    rate[j] = worst > 0 ? 1.0 / worst : 1.0;
  }

  SmallVector<int64_t> n(groups);
  auto fillFromForced = [&]() -> LogicalResult {
    if (static_cast<int64_t>(forced.size()) != replicas)
      return fn.emitOpError("local-batches has ")
             << forced.size() << " entries for " << replicas << " replicas";
    int64_t sum = 0;
    for (int64_t r = 0; r < replicas; ++r) {
      int64_t want = forced[r - r % group];
      if (forced[r] != want || forced[r] % m != 0 || forced[r] < m)
        return fn.emitOpError("local-batches must be positive multiples of ")
               << m << ", equal within each shard group of " << group;
      sum += forced[r];
    }
    if (sum != batch)
      return fn.emitOpError("local-batches add up to ")
             << sum << ", not the global batch of " << batch;
    for (int64_t j = 0; j < groups; ++j)
      n[j] = forced[j * group] / m;
    return success();
  };
  if (!forced.empty()) {
    if (failed(fillFromForced()))
      return failure();
  } else if (even) {
    if (total % groups != 0)
      return fn.emitOpError("the global batch of ")
             << batch << " cannot be cut into " << replicas
             << " equal local batches of " << m
             << " micro-batches: use a multiple of " << replicas * m
             << ", or balance by hardware";
    n.assign(groups, total / groups);
  } else {
    // Proportional to speed, rounded by largest remainder, at least one.
    double rateSum = std::accumulate(rate.begin(), rate.end(), 0.0);
    SmallVector<double> ideal(groups);
    int64_t given = 0;
    for (int64_t j = 0; j < groups; ++j) {
      ideal[j] = total * rate[j] / rateSum;
      n[j] = std::max<int64_t>(1, static_cast<int64_t>(std::floor(ideal[j])));
      given += n[j];
    }
    while (given != total) {
      int64_t pick = -1;
      for (int64_t j = 0; j < groups; ++j) {
        double gap = ideal[j] - n[j];
        if (given < total ? (pick < 0 || gap > ideal[pick] - n[pick])
                          : (n[j] > 1 &&
                             (pick < 0 || gap < ideal[pick] - n[pick])))
          pick = j;
      }
      n[pick] += given < total ? 1 : -1;
      given += given < total ? 1 : -1;
    }
    // Algorithm 1: shed load from devices over their memory.
    while (true) {
      int64_t over = -1;
      for (int64_t j = 0; j < groups; ++j)
        if (n[j] > cap[j] && (over < 0 || n[j] - cap[j] > n[over] - cap[over]))
          over = j;
      if (over < 0)
        break;
      int64_t to = -1;
      for (int64_t j = 0; j < groups; ++j)
        if (n[j] < cap[j] &&
            (to < 0 || n[j] / rate[j] < n[to] / rate[to]))
          to = j;
      if (to < 0)
        break; // reported below, with the device that is over
      // Every replica keeps at least one sample per micro-batch.
      int64_t amount = static_cast<int64_t>(std::min<double>(
          {n[over] - cap[over], cap[to] - n[to], double(n[over] - 1)}));
      if (amount < 1)
        break;
      n[over] -= amount;
      n[to] += amount;
      shifts.push_back(b.getDenseI64ArrayAttr(
          {over * group, to * group, amount * m}));
    }
  }
  units.assign(replicas, 0);
  for (int64_t r = 0; r < replicas; ++r)
    units[r] = n[r / group];

  for (int64_t j = 0; j < groups; ++j) {
    if (n[j] <= cap[j])
      continue;
    for (int64_t r = j * group; r < (j + 1) * group; ++r)
      for (int64_t s = 0; s < stages; ++s)
        if (cluster.limit(deviceOf(s, r)) > 0 &&
            bytesAt(s, n[j]) > cluster.limit(deviceOf(s, r))) {
          double room = 0;
          for (double c : cap)
            room += std::isinf(c) ? double(total) : c;
          std::string advice =
              !forced.empty() || even
                  ? std::string(": balance by hardware, or give it more memory")
                  : ": the other devices have no room for its excess (the "
                    "cluster holds at most " +
                        std::to_string(static_cast<int64_t>(room) * group *
                                       m) +
                        " of the " + std::to_string(batch) + " samples)";
          return overMemory(s, r, n[j], advice);
        }
  }
  return success();
}

LogicalResult Balancer::run() {
  DictionaryAttr planAttr = plan::planOf(fn);
  if (!planAttr || !planAttr.get("global_batch"))
    return fn.emitOpError("has no micro-batches; run -whale-virtual-devices "
                          "and -whale-pipeline first");
  devices = plan::intOf(planAttr, "devices", 1);
  stages = plan::intOf(planAttr, "stages", 1);
  replicas = plan::intOf(planAttr, "replicas", 1);
  m = plan::intOf(planAttr, "micro_batches", 1);
  batch = plan::intOf(planAttr, "global_batch");
  auto g = planAttr.getAs<DenseI64ArrayAttr>("grid");
  grid.assign(g.asArrayRef().begin(), g.asArrayRef().end());
  if (auto shards = planAttr.getAs<DenseI64ArrayAttr>("shards"))
    for (int64_t c : shards.asArrayRef())
      group = std::max(group, c);
  cluster = plan::clusterOf(fn, devices);
  if (failed(measureStages()))
    return failure();
  orderStagesByMemory();

  SmallVector<int64_t> units;
  SmallVector<Attribute> shifts;
  if (failed(shares(units, shifts)))
    return failure();

  SmallVector<int64_t> local, memory(devices, 0);
  SmallVector<double> seconds(devices, 0);
  for (int64_t r = 0; r < replicas; ++r) {
    local.push_back(units[r] * m);
    for (int64_t s = 0; s < stages; ++s) {
      int64_t d = deviceOf(s, r);
      memory[d] = static_cast<int64_t>(std::ceil(bytesAt(s, units[r])));
      seconds[d] = kStepFlopsPerForward * costs[s].flopsPerSample *
                   double(local.back()) / cluster.rate(d);
    }
  }
  bool balanced = forced.empty() && !even;
  // The planner elaborates the model once per micro-batch size: the plan's
  // micro_batch is then the one this copy is elaborated at, so later passes
  // (weights, sharding) build the programs of the replicas of that size.
  int64_t micro = units.front();
  auto first = cast<RankedTensorType>(fn.getArgumentTypes().front());
  if (llvm::is_contained(units, first.getShape()[0]))
    micro = first.getShape()[0];
  plan::updatePlan(
      fn,
      {b.getNamedAttr("balance", b.getStringAttr(balanced ? "hardware"
                                                 : even   ? "even"
                                                          : "given")),
       b.getNamedAttr("grid", b.getDenseI64ArrayAttr(grid)),
       b.getNamedAttr("local_batches", b.getDenseI64ArrayAttr(local)),
       b.getNamedAttr("micro_batch", b.getI64IntegerAttr(micro)),
       b.getNamedAttr("device_memory", b.getDenseI64ArrayAttr(memory)),
       b.getNamedAttr("device_seconds", b.getDenseF64ArrayAttr(seconds)),
       b.getNamedAttr("shifts", b.getArrayAttr(shifts))});
  return success();
}

struct BalancePass : public whale::impl::WhaleBalanceBase<BalancePass> {
  using Base::Base;

  void runOnOperation() override {
    OpBuilder b(&getContext());
    SmallVector<int64_t> given(localBatches.begin(), localBatches.end());
    if (!plan::forEachModel(getOperation(), [&](func::FuncOp fn) {
          bool evenPlan = even;
          if (auto a = dyn_cast_or_null<StringAttr>(
                  plan::configValue(fn, "balance")))
            evenPlan = evenPlan || a.getValue() == "even";
          return Balancer(fn, b, evenPlan, given).run();
        }))
      signalPassFailure();
  }
};

} // namespace
