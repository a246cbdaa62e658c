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
//     A shard group takes one share. When its devices differ in speed its
//     ranks split the group's rows and every split dimension unevenly
//     (uneven shards): each position in the group gets a whole-number
//     weight, the same in every group so the parameter parts of different
//     groups line up for their all-reduce, and the split dimensions are cut
//     in sum(weights) units (runtime/core/Parts.h), a number that must divide
//     them. Under split_rows = "whole" the group's ranks all read its rows
//     and compute their part (weight / sum of weights) of its split
//     TaskGraphs' work on them, and the whole of its replicated ones: the
//     weights then cut the split dimensions only.
//  3. Every device's predicted compute time and peak memory is recorded;
//     a plan that cannot fit fails here, naming the device, the TaskGraph
//     and the bytes.
//
// Costs come from the cost interface at the batch the model is elaborated
// at, scaled per sample. A step runs each forward op and the backward
// autodiff builds for it (perfmodel/StepCost.h; the forward twice under
// recomputation), every op priced on each device as the simulator prices
// it (perfmodel/DeviceSpeed.h: a matmul at the matrix rate of the plan's
// precision and its tiles' waves, every op no faster than its memory
// traffic), so a device with the faster tensor cores or memory takes the
// larger share. A stage holds its parameters, their gradients, the
// optimizer state and its in-flight micro-batches' activations.
//
// `even` keeps equal shares (and only checks memory); `local-batches`
// fixes the shares (the planner's later runs, at each micro-batch, reuse
// the first run's).
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"
#include "lowering/Plan.h"
#include "lowering/Recompute.h"
#include "lowering/Transforms/Parallel/ClusterView.h"
#include "lowering/Transforms/Parallel/GatherUnits.h"
#include "lowering/Transforms/Parallel/StageMemory.h"

#include "dialects/Whale/IR/TrainAttrs.h"
#include "perfmodel/DeviceModel.h"
#include "perfmodel/OpCost.h"
#include "perfmodel/StepCost.h"

#include <cmath>
#include <functional>
#include <numeric>

namespace whale {
#define GEN_PASS_DEF_WHALEBALANCE
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

/// Units a split dimension may be cut in for uneven shards: more follow
/// speeds more closely, fewer leave more dimensions divisible.
constexpr int64_t kMaxShardUnits = 64;
/// Uneven shards may leave whole the split parameters no dimension of
/// which the units divide, while they hold at most 1/this of the elements.
constexpr int64_t kMaxUncutShare = 100;

/// What one device of a stage needs, per sample of its local batch (its
/// rows: in a shard group a rank computes its part of the group's rows'
/// work, as much as its own rows' worth).
struct StageCost {
  TaskGraphOp first;       ///< where its diagnostics point
  int64_t fixedBytes = 0;  ///< bytes of its parameters
  int64_t splitBytes = 0;  ///< the same of split parameters, all parts
  /// Bytes of each layer's whole and split parameters (all parts): under
  /// shard_parameters a device holds its largest layers gathered.
  llvm::StringMap<std::pair<double, double>> unitBytes;
  /// The largest whole and split (all parts) parameter: a bucket alone
  /// where larger than the bucket size.
  double largestWhole = 0, largestSplit = 0;
  /// The largest unit's bytes on a rank holding `part` of split ones,
  /// `layers` layers a unit (gather_layers): at most the `layers` largest
  /// layers' (the unit's layers are neighbours, which the bound ignores).
  double largestUnit(double part, int64_t layers) const {
    std::vector<double> sizes;
    for (const auto &unit : unitBytes)
      sizes.push_back(unit.getValue().first + unit.getValue().second * part);
    const size_t k =
        std::min(sizes.size(), size_t(std::max<int64_t>(1, layers)));
    std::partial_sort(sizes.begin(), sizes.begin() + k, sizes.end(),
                      std::greater<double>());
    return std::accumulate(sizes.begin(), sizes.begin() + k, 0.0);
  }
  double actPerSample = 0; ///< bytes of forward outputs per sample
  /// Under split_rows = "whole": the same of the split TaskGraphs' ops, of
  /// which a rank computes its part (its weight's share) of every row.
  double splitActPerSample = 0;
  int64_t inFlight = 1; ///< micro-batches whose activations it holds
  /// Under recomputation (0 without): bytes per sample of what it
  /// receives and its checkpoints, and of its largest segment's outputs.
  double keptPerSample = 0, segmentPerSample = 0;
  /// What a step computes of its ops (forward and backward) as the device
  /// model prices it, at the elaborated batch, each with whether a rank
  /// computes its part of it (a split TaskGraph's op under split_rows =
  /// "whole").
  SmallVector<std::pair<perf::OpCost, bool>> ops;
};

/// `total` whole units shared in proportion to `speed`, at least one each,
/// rounded by largest remainder (`total` is at least one per share).
SmallVector<int64_t> largestRemainder(ArrayRef<double> speed, int64_t total) {
  const size_t n = speed.size();
  const double sum = std::accumulate(speed.begin(), speed.end(), 0.0);
  SmallVector<double> ideal(n);
  SmallVector<int64_t> out(n);
  int64_t given = 0;
  for (size_t i = 0; i < n; ++i) {
    ideal[i] = total * speed[i] / sum;
    out[i] = std::max<int64_t>(1, static_cast<int64_t>(std::floor(ideal[i])));
    given += out[i];
  }
  while (given != total) {
    const bool more = given < total;
    int64_t pick = -1;
    for (size_t i = 0; i < n; ++i) {
      double gap = ideal[i] - out[i];
      if (more ? (pick < 0 || gap > ideal[pick] - out[pick])
               : (out[i] > 1 && (pick < 0 || gap < ideal[pick] - out[pick])))
        pick = static_cast<int64_t>(i);
    }
    out[pick] += more ? 1 : -1;
    given += more ? 1 : -1;
  }
  return out;
}

class Balancer {
public:
  Balancer(func::FuncOp fn, OpBuilder &b, bool even, ArrayRef<int64_t> forced,
           ArrayRef<int64_t> forcedWeights, int64_t ownWeight)
      : fn(fn), b(b), even(even), forced(forced), forcedWeights(forcedWeights),
        ownWeight(ownWeight) {}
  LogicalResult run();

private:
  func::FuncOp fn;
  OpBuilder &b;
  bool even;
  ArrayRef<int64_t> forced, forcedWeights;
  int64_t ownWeight;
  /// Per position in a shard group, its weight, and their sum: the units
  /// of rows (and of split dimensions) a group's share counts in. Equal
  /// shards weigh 1 each.
  SmallVector<int64_t> weights;
  int64_t units = 1;
  bool uneven() const {
    return llvm::any_of(weights, [&](int64_t w) { return w != weights[0]; });
  }
  plan::ClusterView cluster;
  int64_t devices = 1, stages = 1, replicas = 1, m = 1, batch = 0, group = 1;
  /// split_rows = "whole": a group's ranks read the same rows, so a unit of
  /// a group's share is one row on each of them (else weight rows on each).
  bool wholeRows = false;
  int64_t rowUnits() const { return wholeRows ? 1 : units; }
  int states = 0; ///< the optimizer's tensors per parameter
  /// The optimizer's state sharded over the replicas that sum a
  /// parameter's gradient (shard_optimizer): each holds 1/peers of it.
  bool shardOptimizer = false;
  /// The parameters themselves sharded so too (shard_parameters), and the
  /// gradients' running sums (shard_gradients).
  bool shardParameters = false, shardGradients = false;
  int64_t gatherLayers = 1; ///< layers a gathered unit (gather_layers)
  /// Replicas a sharding group (shard_group, hybrid sharding; 0: all).
  int64_t sharding = 0;
  /// Every layer kept gathered for the step (gather_every = "step").
  bool keepGathered = false;
  /// Buckets of gradients (of this many bytes) reduced to their owners as
  /// the backward goes on (plan::reducedInBackward).
  bool reducedInBackward = false;
  double bucketBytes = plan::kDefaultBucketBytes;
  bool recompute = false;  ///< activation recomputation
  double inputsPerRow = 0; ///< bytes of a row of the model's inputs
  SmallVector<int64_t> grid;
  SmallVector<StageCost> costs;

  int64_t deviceOf(int64_t s, int64_t r) const {
    return grid[s * replicas + r];
  }
  int64_t weightOf(int64_t r) const { return weights[r % group]; }
  int64_t rowsPerUnit(int64_t r) const { return wholeRows ? 1 : weightOf(r); }
  /// The part of a split TaskGraph's work per row that rank r computes
  /// when its group shares rows.
  double shareOf(int64_t r) const { return double(weightOf(r)) / units; }
  /// The models that price each device's ops, and the batch the costs
  /// were read at.
  SmallVector<perf::DeviceModel> models;
  /// Per (stage, device): seconds of the stage's ops on the device at the
  /// elaborated batch, those every rank computes whole and those it
  /// computes its part of. The shares are searched over many times.
  mutable DenseMap<std::pair<int64_t, int64_t>, std::pair<double, double>>
      stageSeconds;
  double elaborated = 1;
  /// Seconds of a step per row of stage s on replica r's device.
  double stepSecondsPerRow(int64_t s, int64_t r) const;
  /// Replica r's parameters, gradients and optimizer state at stage s.
  int64_t fixedAt(int64_t s, int64_t r) const {
    const StageCost &c = costs[s];
    const double part = double(weightOf(r)) / units;
    // The state is shared out within a sharding group (hybrid sharding),
    // else over all the replicas holding the same part.
    const int64_t sharers =
        sharding > 0 ? std::min(sharding, replicas) : replicas;
    const double peers =
        shardOptimizer ? double(std::max<int64_t>(1, sharers / group)) : 1.0;
    // Sharded parameters: the layers gathered from their owners besides
    // (all of them where the config keeps them for the step; where it does
    // not say, -whale-shard-parameters keeps them only if that fits beside
    // this estimate).
    const double gathered =
        !shardParameters || peers <= 1 ? 0.0
        : keepGathered
            ? c.fixedBytes + c.splitBytes * part
            : plan::kGatheredUnitsHeld * c.largestUnit(part, gatherLayers);
    // Buckets reduced to their owners during the backward leave a device
    // its own part of a micro-batch's gradients and the bucket it fills.
    const double params = c.fixedBytes + c.splitBytes * part;
    const double unreduced = plan::unreducedShare(
        params, peers,
        std::max({bucketBytes, c.largestWhole, c.largestSplit * part}),
        reducedInBackward);
    return static_cast<int64_t>(std::ceil(
        plan::fixedBytesOf(params, states / peers, m,
                           shardParameters ? 1 / peers : 1.0,
                           shardGradients ? 1 / peers : 1.0, unreduced) +
        gathered));
  }
  /// Bytes of activations per row of a micro-batch: those in flight, plus
  /// about one micro-batch's worth for the gradients backward makes of
  /// them. An upper estimate (docs/balancing.md compares it with the
  /// allocator's measured peaks).
  double actPerRow(int64_t s, int64_t r) const {
    const StageCost &c = costs[s];
    if (recompute)
      return plan::rowBytesRecomputing(c.keptPerSample, c.segmentPerSample,
                                       c.inFlight, inputsPerRow, m);
    return plan::rowBytesOf(c.actPerSample + c.splitActPerSample * shareOf(r),
                            c.inFlight, inputsPerRow, m);
  }
  double bytesAt(int64_t s, int64_t r, int64_t rows) const {
    return fixedAt(s, r) + actPerRow(s, r) * rows;
  }
  /// Replica r's time per row of its micro-batches: its slowest stage's.
  double secondsPerRow(int64_t r) const;
  LogicalResult measureStages();
  void orderStagesByMemory();
  LogicalResult chooseWeights();
  LogicalResult shares(SmallVector<int64_t> &n, SmallVector<Attribute> &shifts);
  LogicalResult overMemory(int64_t s, int64_t r, int64_t rows,
                           StringRef advice);
};

LogicalResult Balancer::measureStages() {
  auto args = fn.getArgumentTypes();
  auto first = args.empty() ? RankedTensorType()
                            : dyn_cast<RankedTensorType>(args.front());
  if (!first || first.getRank() == 0 || first.getShape()[0] < 1)
    return fn.emitOpError("has no batch dimension to balance");
  elaborated = double(first.getShape()[0]);
  const bool bf16 = ampBf16(fn);
  models.clear();
  for (int64_t d = 0; d < devices; ++d)
    models.push_back(cluster.deviceModel(d));
  recompute = plan::recomputes(fn);
  states = optimizerStateCount(fn);
  shardOptimizer = settingsOf(fn).shardsOptimizerState();
  shardParameters = settingsOf(fn).getShardParameters();
  shardGradients = settingsOf(fn).getShardGradients();
  gatherLayers = settingsOf(fn).layersGathered();
  sharding = settingsOf(fn).shardingGroup();
  keepGathered = settingsOf(fn).getGatherEvery() == GatherEvery::step;
  bucketBytes = plan::gradientBucketBytes(settingsOf(fn));
  reducedInBackward = plan::reducedInBackward(settingsOf(fn), m);
  const ModelPlan plan = ModelPlan::of(fn);
  const bool gpipe = plan.schedule() == PipelineSchedule::gpipe;
  costs.assign(stages, StageCost{});
  // What a stage reads from earlier stages it holds like its own outputs:
  // received per micro-batch, kept for backward. The model's inputs count
  // apart (every rank holds its whole local batch of them).
  for (Type t : args)
    inputsPerRow += tensorBytes(t) / elaborated;
  SmallVector<DenseSet<Value>> received(stages);
  SmallVector<SmallVector<Operation *>> stageOps(stages); // no parameters
  SmallVector<Operation *> all;
  for (TaskGraphOp tg : plan::taskGraphs(fn))
    for (Operation &op : tg.getBody().front().without_terminator())
      all.push_back(&op);
  SmallVector<perf::StepOpCosts, 0> step = perf::stepCostsOf(all, fn, bf16);
  size_t at = 0;
  for (TaskGraphOp tg : plan::taskGraphs(fn)) {
    FailureOr<int64_t> stage = plan::checkedStage(tg, stages);
    if (failed(stage))
      return failure();
    const int64_t s = *stage;
    const bool split = tg->hasAttr("shards");
    // Sharing the group's rows, a rank computes its part of a split
    // TaskGraph's work per row (else its own rows' worth, as above).
    const bool shared = split && wholeRows;
    StageCost &c = costs[s];
    if (!c.first)
      c.first = tg;
    for (Operation &op : tg.getBody().front().without_terminator()) {
      const perf::StepOpCosts &opStep = step[at++];
      if (auto p = dyn_cast<ParamOp>(op)) {
        (split ? c.splitBytes : c.fixedBytes) += tensorBytes(p.getType());
        std::pair<double, double> &unit =
            c.unitBytes[plan::gatherUnitOf(p.getName())];
        (split ? unit.second : unit.first) += double(tensorBytes(p.getType()));
        double &largest = split ? c.largestSplit : c.largestWhole;
        largest = std::max(largest, double(tensorBytes(p.getType())));
        continue;
      }
      if (auto cost = dyn_cast<CostOpInterface>(op))
        (shared ? c.splitActPerSample : c.actPerSample) +=
            cost.getOutputMemory() / elaborated;
      for (int pass = 0; pass < (recompute ? 2 : 1); ++pass)
        for (const perf::OpCost &forward : opStep.forward)
          c.ops.push_back({forward, shared});
      for (const perf::OpCost &backward : opStep.backward)
        c.ops.push_back({backward, shared});
      for (Value v : op.getOperands()) {
        Value src = plan::throughYields(v);
        if (!isa<BlockArgument>(src) && plan::stageOf(src) != s &&
            !src.getDefiningOp<ParamOp>() && received[s].insert(src).second) {
          c.actPerSample += tensorBytes(src.getType()) / elaborated;
          c.keptPerSample += tensorBytes(src.getType()) / elaborated;
        }
      }
      stageOps[s].push_back(&op);
    }
    c.inFlight =
        plan::inFlightOf(s, stages, m, gpipe, plan.chunks().value_or(1));
  }
  // A rank of a group that shares its rows holds its part of a split
  // TaskGraph's values (an equal share: the segments are chosen once per
  // stage), as the sharded program -whale-rank-programs cuts will.
  auto share = [&](Operation *op) {
    auto tg = op->getParentOfType<TaskGraphOp>();
    auto shards = tg ? tg->getAttrOfType<IntegerAttr>("shards") : IntegerAttr();
    return shards && wholeRows && shards.getInt() > 0
               ? 1.0 / double(shards.getInt())
               : 1.0;
  };
  if (recompute)
    for (int64_t s = 0; s < stages; ++s) {
      plan::RecomputeBytes r =
          plan::recomputeBytes(stageOps[s], costs[s].inFlight, share);
      costs[s].keptPerSample += r.checkpoints / elaborated;
      costs[s].segmentPerSample = r.segment / elaborated;
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
    // In range: measureStages checked every TaskGraph's stage.
    const int64_t s = plan::stageOf(tg);
    tg->setAttr("virtual_device",
                b.getDenseI64ArrayAttr(
                    ArrayRef<int64_t>(grid).slice(s * replicas, replicas)));
  }
}

LogicalResult Balancer::overMemory(int64_t s, int64_t r, int64_t rows,
                                   StringRef advice) {
  StageCost &c = costs[s];
  int64_t d = deviceOf(s, r), fixed = fixedAt(s, r);
  if (rows == 0)
    return c.first.emitOpError("does not fit on device ")
           << d << ": its parameters, gradients and optimizer state need "
           << fixed << " bytes, over the device's limit of " << cluster.limit(d)
           << " bytes" << advice;
  int64_t act = static_cast<int64_t>(std::ceil(actPerRow(s, r) * rows));
  return c.first.emitOpError("does not fit on device ")
         << d << ": it needs " << fixed + act << " bytes (" << fixed
         << " for parameters, gradients and optimizer state, " << act
         << " for activations: " << c.inFlight << " micro-batch"
         << (c.inFlight == 1 ? "" : "es") << " of " << rows
         << " samples in flight and their gradients), over the device's "
         << "limit of " << cluster.limit(d) << " bytes" << advice;
}

double Balancer::stepSecondsPerRow(int64_t s, int64_t r) const {
  const int64_t d = deviceOf(s, r);
  auto [it, fresh] = stageSeconds.try_emplace({s, d});
  if (fresh) {
    // Each op's time without its launch, which a share of rows does not
    // scale.
    const perf::DeviceModel &model = models[d];
    for (const auto &[cost, shared] : costs[s].ops)
      (shared ? it->second.second : it->second.first) +=
          perf::opSeconds(cost, model) - model.launchSeconds;
  }
  const auto [whole, part] = it->second;
  return (whole + part * shareOf(r)) / elaborated;
}

double Balancer::secondsPerRow(int64_t r) const {
  double worst = 0;
  for (int64_t s = 0; s < stages; ++s)
    worst = std::max(worst, stepSecondsPerRow(s, r));
  return worst;
}

/// The shard groups' weights: given, equal, or by speed. By speed, each
/// position weighs as its slowest device over the groups, rounded to whole
/// units by largest remainder; of the unit counts that divide the batch's
/// rows and a dimension of (nearly) every split parameter, the fewest that
/// come within 1% of the best balance any of them reaches.
LogicalResult Balancer::chooseWeights() {
  weights.assign(group, 1);
  units = group;
  if (!forcedWeights.empty()) {
    if (static_cast<int64_t>(forcedWeights.size()) != group ||
        llvm::any_of(forcedWeights, [](int64_t w) { return w < 1; }))
      return fn.emitOpError("shard-weights must be ")
             << group << " positive numbers, one per rank of a shard group";
    weights.assign(forcedWeights.begin(), forcedWeights.end());
    units = std::accumulate(weights.begin(), weights.end(), int64_t(0));
    if (ownWeight != 0 && !llvm::is_contained(weights, ownWeight))
      return fn.emitOpError("shard-weight ")
             << ownWeight << " is none of the shard-weights";
    return success();
  }
  if (group == 1 || even || !forced.empty())
    return success();
  SmallVector<double> speed(group, std::numeric_limits<double>::infinity());
  for (int64_t r = 0; r < replicas; ++r) {
    double t = secondsPerRow(r);
    speed[r % group] = std::min(speed[r % group], t > 0 ? 1.0 / t : 1.0);
  }
  if (llvm::all_of(speed, [&](double x) {
        return std::abs(x - speed[0]) <= 1e-9 * speed[0];
      }))
    return success();
  // Every stage's split TaskGraphs must cut in the group's size for one
  // set of weights to serve them.
  SmallVector<ArrayRef<int64_t>> shapes;
  SmallVector<std::pair<int64_t, int64_t>> leads; ///< [dimension, its lead]
  int64_t elements = 0;
  for (TaskGraphOp tg : plan::taskGraphs(fn)) {
    auto shards = tg->getAttrOfType<IntegerAttr>("shards");
    if (!shards)
      continue;
    if (shards.getInt() != group)
      return success();
    tg.walk([&](ParamOp p) {
      shapes.push_back(p.getType().getShape());
      elements += p.getType().getNumElements();
    });
    // A reshape that cuts a dimension in two (width -> heads x head size)
    // passes a split on as a split of the leading part (the heads): units
    // that divide the width but not the heads would gather there.
    tg.walk([&](ReshapeOp r) {
      ArrayRef<int64_t> in =
          cast<RankedTensorType>(r.getInput().getType()).getShape();
      ArrayRef<int64_t> out = cast<RankedTensorType>(r.getType()).getShape();
      int64_t before = 1;
      for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d) {
        int64_t outBefore = 1;
        for (int64_t e = 0; e < static_cast<int64_t>(out.size()); ++e) {
          if (outBefore == before && out[e] != in[d] && out[e] > 1 && d > 0)
            leads.push_back({in[d], out[e]});
          outBefore *= out[e];
        }
        before *= in[d];
      }
    });
  }
  // A unit count must divide the rows, the leading parts reshapes cut the
  // dimensions it divides into, and some dimension of nearly every split
  // parameter: a small one it cannot cut (a bias of 10 classes) stays
  // whole, as a row-split layer's bias does anyway.
  auto admissible = [&](int64_t u) {
    // Shared rows are not cut in units; each rank's are the group's.
    if (!wholeRows && (batch / m) % u != 0)
      return false;
    for (auto [dim, lead] : leads)
      if (dim % u == 0 && lead % u != 0)
        return false;
    int64_t uncut = 0;
    for (ArrayRef<int64_t> shape : shapes)
      if (llvm::none_of(shape, [&](int64_t d) { return d % u == 0; })) {
        int64_t n = 1;
        for (int64_t d : shape)
          n *= d;
        uncut += n;
      }
    return uncut * kMaxUncutShare <= elements;
  };
  const double total = std::accumulate(speed.begin(), speed.end(), 0.0);
  double bestScore = std::numeric_limits<double>::infinity();
  SmallVector<std::pair<double, SmallVector<int64_t>>> tried;
  for (int64_t u = group; u <= kMaxShardUnits; ++u) {
    if (!admissible(u))
      continue;
    SmallVector<int64_t> w = largestRemainder(speed, u);
    // The group's time per unit of rows over the ideal's (1: perfect).
    double worst = 0;
    for (int64_t i = 0; i < group; ++i)
      worst = std::max(worst, double(w[i]) / speed[i]);
    double score = worst * total / double(u);
    bestScore = std::min(bestScore, score);
    tried.push_back({score, w});
  }
  for (auto &[score, w] : tried)
    if (score <= bestScore * 1.01) {
      weights = w;
      break;
    }
  units = std::accumulate(weights.begin(), weights.end(), int64_t(0));
  return success();
}

/// Units of rows per micro-batch for each shard group (a group of one
/// replica without split TaskGraphs): rank r computes n * its weight rows.
LogicalResult Balancer::shares(SmallVector<int64_t> &n,
                               SmallVector<Attribute> &shifts) {
  const int64_t groups = replicas / group;
  if (batch % (rowUnits() * m) != 0)
    return fn.emitOpError("the global batch of ")
           << batch << " cannot be cut into micro-batches of whole samples "
           << "for shard groups of " << rowUnits() << " x " << m
           << " micro-batches: use a multiple of " << rowUnits() * m;
  const int64_t total = batch / (rowUnits() * m);
  if (total < groups)
    return fn.emitOpError("the global batch of ")
           << batch << " is too small to give each of " << groups
           << " replicas at least " << m << " samples";

  // Per group: its speed in units per second (its slowest rank's), and
  // how many units fit in memory on every device it uses.
  SmallVector<double> rate(groups), cap(groups);
  for (int64_t j = 0; j < groups; ++j) {
    double worst = 0;
    cap[j] = std::numeric_limits<double>::infinity();
    for (int64_t r = j * group; r < (j + 1) * group; ++r) {
      worst = std::max(worst, secondsPerRow(r) * rowsPerUnit(r));
      for (int64_t s = 0; s < stages; ++s) {
        int64_t d = deviceOf(s, r);
        double room = cluster.room(d) - fixedAt(s, r);
        if (room < 0)
          return overMemory(s, r, 0, "");
        double perUnit = actPerRow(s, r) * rowsPerUnit(r);
        if (perUnit > 0)
          cap[j] = std::min(cap[j], std::floor(room / perUnit));
      }
    }
    rate[j] = worst > 0 ? 1.0 / worst : 1.0;
  }

  n.assign(groups, 0);
  auto fillFromForced = [&]() -> LogicalResult {
    if (static_cast<int64_t>(forced.size()) != replicas)
      return fn.emitOpError("local-batches has ")
             << forced.size() << " entries for " << replicas << " replicas";
    int64_t sum = 0;
    for (int64_t r = 0; r < replicas; ++r) {
      int64_t per = forced[r - r % group] / (m * rowsPerUnit(r - r % group));
      if (forced[r] != per * m * rowsPerUnit(r) || per < 1)
        return fn.emitOpError("local-batches must be positive multiples of ")
               << m << ", within each shard group of " << group
               << (wholeRows ? " the same"
                             : " in the proportion of its weights");
      if (!wholeRows || r % group == 0)
        sum += forced[r];
    }
    if (sum != batch)
      return fn.emitOpError("local-batches add up to ")
             << sum << ", not the global batch of " << batch;
    for (int64_t j = 0; j < groups; ++j)
      n[j] = forced[j * group] / (m * rowsPerUnit(0));
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
    n = largestRemainder(rate, total);
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
        if (n[j] < cap[j] && (to < 0 || n[j] / rate[j] < n[to] / rate[to]))
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
          {over * group, to * group,
           amount * (wholeRows ? 1 : units / group) * m}));
    }
  }

  for (int64_t j = 0; j < groups; ++j) {
    if (n[j] <= cap[j])
      continue;
    for (int64_t r = j * group; r < (j + 1) * group; ++r)
      for (int64_t s = 0; s < stages; ++s)
        if (cluster.limit(deviceOf(s, r)) > 0 &&
            bytesAt(s, r, n[j] * rowsPerUnit(r)) >
                cluster.limit(deviceOf(s, r))) {
          double room = 0;
          for (double c : cap)
            room += std::isinf(c) ? double(total) : c;
          std::string advice =
              !forced.empty() || even
                  ? std::string(": balance by hardware, or give it more memory")
                  : ": the other devices have no room for its excess (the "
                    "cluster holds at most " +
                        std::to_string(static_cast<int64_t>(room) * rowUnits() *
                                       m) +
                        " of the " + std::to_string(batch) + " samples)";
          return overMemory(s, r, n[j] * rowsPerUnit(r), advice);
        }
  }
  return success();
}

LogicalResult Balancer::run() {
  const ModelPlan plan = ModelPlan::of(fn);
  if (!plan.globalBatch() || !plan.grid())
    return fn.emitOpError("has no micro-batches; run -whale-virtual-devices "
                          "and -whale-pipeline first");
  devices = plan.devices().value_or(1);
  stages = plan.stages().value_or(1);
  replicas = plan.replicas().value_or(1);
  m = plan.microBatches().value_or(1);
  batch = *plan.globalBatch();
  grid.assign(plan.grid()->begin(), plan.grid()->end());
  if (std::optional<ArrayRef<int64_t>> shards = plan.shards())
    for (int64_t c : *shards)
      group = std::max(group, c);
  wholeRows = plan.rowGroupOrOne() > 1;
  cluster = plan::clusterOf(fn, devices);
  if (failed(measureStages()))
    return failure();
  orderStagesByMemory();
  if (failed(chooseWeights()))
    return failure();

  SmallVector<int64_t> n;
  SmallVector<Attribute> shifts;
  if (failed(shares(n, shifts)))
    return failure();

  SmallVector<int64_t> local, memory(devices, 0), activations(devices, 0);
  SmallVector<double> seconds(devices, 0);
  for (int64_t r = 0; r < replicas; ++r) {
    const int64_t rows = n[r / group] * rowsPerUnit(r);
    local.push_back(rows * m);
    for (int64_t s = 0; s < stages; ++s) {
      int64_t d = deviceOf(s, r);
      memory[d] = static_cast<int64_t>(std::ceil(bytesAt(s, r, rows)));
      activations[d] = static_cast<int64_t>(std::ceil(actPerRow(s, r) * rows));
      seconds[d] = stepSecondsPerRow(s, r) * double(local.back());
    }
  }
  bool balanced = forced.empty() && !even;
  // The planner elaborates the model once per rank shape (rows, and weight
  // with uneven shards): the plan's micro_batch is then the one this copy
  // is elaborated at, so later passes (weights, sharding) build the
  // programs of the ranks of that shape.
  int64_t micro = local.front() / m, own = weights.front();
  auto first = cast<RankedTensorType>(fn.getArgumentTypes().front());
  for (int64_t r = 0; r < replicas; ++r)
    if (local[r] / m == first.getShape()[0] &&
        (ownWeight == 0 || weightOf(r) == ownWeight)) {
      micro = local[r] / m;
      own = weightOf(r);
      break;
    }
  PlanUpdate update(fn);
  update
      .balance(balanced ? BalanceKind::hardware
               : even   ? BalanceKind::even
                        : BalanceKind::given)
      .grid(grid)
      .localBatches(local)
      .microBatch(micro)
      .deviceMemory(memory)
      .deviceActivations(activations)
      .deviceSeconds(seconds)
      .shifts(b.getArrayAttr(shifts));
  if (uneven())
    update.shardWeights(weights).shardWeight(own);
  update.apply();
  return success();
}

struct BalancePass : public whale::impl::WhaleBalanceBase<BalancePass> {
  using Base::Base;

  void runOnOperation() override {
    OpBuilder b(&getContext());
    SmallVector<int64_t> given(localBatches.begin(), localBatches.end());
    SmallVector<int64_t> givenWeights(shardWeights.begin(), shardWeights.end());
    if (!plan::forEachModel(getOperation(), [&](func::FuncOp fn) {
          bool evenPlan = even || settingsOf(fn).even();
          return Balancer(fn, b, evenPlan, given, givenWeights, shardWeight)
              .run();
        }))
      signalPassFailure();
  }
};

} // namespace
