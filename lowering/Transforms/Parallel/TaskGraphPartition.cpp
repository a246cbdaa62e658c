//===- TaskGraphPartition.cpp - -whale-taskgraph-partition ----------------===//
//
// Every op of a model ends up in a TaskGraph. Ops the script left outside any
// block join a TaskGraph of the model's default strategy, one per run of
// such ops. With auto_parallel, the model is cut afresh into num_task_graph
// contiguous TaskGraphs, each parameter going with its first user: the cut
// that makes the slowest stage fastest on the devices it will run on (each
// op and its backward priced by the device model of the slowest of them, as
// -whale-balance and `whale sim` price it) among the cuts
// whose every stage fits its device's memory, by the balance pass's memory
// model (parameters with gradients and optimizer state, and the in-flight
// micro-batches' activations at an even share of the batch). With
// task_graph_split = c each part is a split(c) TaskGraph (tensor parallel
// within a stage). The cut is
// recorded (`whale.cut`) so the planner's later runs, at other batch
// sizes, make the same one.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"
#include "lowering/Plan.h"
#include "lowering/Recompute.h"
#include "lowering/Transforms/Parallel/ClusterView.h"
#include "lowering/Transforms/Parallel/StageMemory.h"
#include "perfmodel/DeviceModel.h"
#include "perfmodel/StepCost.h"

#include "dialects/Whale/IR/TrainAttrs.h"

#include "llvm/ADT/SetVector.h"

#include <algorithm>
#include <cmath>

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
  auto tg =
      TaskGraphOp::create(b, ops.front()->getLoc(), types,
                          StrategyAttr::get(b.getContext(), strategy), devices);
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

/// The devices stage i of a k-stage cut of split(c) parts will run on: with
/// a `whale.cluster` of k x c x copies devices, each copy's stage i takes c
/// consecutive devices, and -whale-balance hands each copy's blocks to the
/// stages in order of memory, most first. A stage is as fast as its slowest
/// copy and has the room of its tightest one (`device`); a block of c
/// devices computes and holds c times what its slowest device does (what
/// -whale-sharding leaves replicated is not counted: the balance pass
/// checks the sharded plan). Alike (nominal one-thread CPU devices, as
/// lowering/Transforms/Parallel/ClusterView.h) and unlimited without a cluster.
struct StageDevices {
  SmallVector<double> room;
  SmallVector<int64_t> device;
  int64_t copies = 1;
  /// Per stage, the models of its devices: an op takes as long as on the
  /// slowest of them.
  SmallVector<SmallVector<perf::DeviceModel>> models;
};

StageDevices stageDevices(func::FuncOp fn, int64_t k, int64_t c) {
  StageDevices s;
  s.room.assign(k, std::numeric_limits<double>::infinity());
  s.device.assign(k, 0);
  s.models.assign(k, {plan::ClusterView().deviceModel(0)});
  auto module = fn->getParentOfType<ModuleOp>();
  auto given = module ? module->getAttrOfType<ClusterAttr>("whale.cluster")
                      : ClusterAttr();
  const int64_t devices = given ? int64_t(given.getDevices().size()) : 0;
  if (!given || devices % (k * c) != 0)
    return s;
  plan::ClusterView cluster = plan::clusterOf(fn, devices);
  s.copies = devices / (k * c);
  s.models.assign(k, {});
  // Per stage, the devices priced so far: alike ones price alike.
  SmallVector<SmallVector<perf::DeviceDescription>> seen(k);
  auto blockRoom = [&](int64_t first) {
    double r = std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < c; ++j)
      r = std::min(r, cluster.room(first + j));
    return r * double(c);
  };
  for (int64_t copy = 0; copy < s.copies; ++copy) {
    SmallVector<int64_t> blocks; // each block's first device
    for (int64_t i = 0; i < k; ++i)
      blocks.push_back((copy * k + i) * c);
    std::stable_sort(blocks.begin(), blocks.end(), [&](int64_t a, int64_t b) {
      return blockRoom(a) > blockRoom(b);
    });
    for (int64_t i = 0; i < k; ++i) {
      for (int64_t j = 0; j < c; ++j) {
        const perf::DeviceDescription &d = cluster.device(blocks[i] + j);
        if (llvm::none_of(seen[i], [&](const perf::DeviceDescription &x) {
              return perf::sameDevice(x, d);
            })) {
          seen[i].push_back(d);
          s.models[i].push_back(perf::deviceModelOf(d));
        }
      }
      if (copy == 0 || blockRoom(blocks[i]) < s.room[i]) {
        s.room[i] = blockRoom(blocks[i]);
        s.device[i] = blocks[i];
      }
    }
  }
  return s;
}

/// The devices of k TaskGraphs dealt out as v chunks to each of p = k / v
/// stages (virtual_stages = v): TaskGraph i runs on stage i mod p, with a
/// v-th of its room.
StageDevices chunkDevices(const StageDevices &stages, int64_t k, int64_t v) {
  StageDevices s = stages;
  const int64_t p = k / v;
  s.room.clear();
  s.device.clear();
  s.models.clear();
  for (int64_t i = 0; i < k; ++i) {
    s.room.push_back(stages.room[i % p] / double(v));
    s.device.push_back(stages.device[i % p]);
    s.models.push_back(stages.models[i % p]);
  }
  return s;
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

  /// Where each of the k parts of `compute` ends: the cut whose slowest
  /// stage is fastest, among those whose stages fit their devices' memory;
  /// among equals, the one with the least sum of squared stage times, then
  /// the earliest ends.
  LogicalResult chooseEnds(func::FuncOp fn, ArrayRef<Operation *> compute,
                           int64_t k, int64_t c, SmallVector<int64_t> &ends) {
    const int64_t n = compute.size();
    // Interleaved, the k parts are v chunks on each of k / v stages.
    int64_t v = settingsOf(fn).chunks();
    if (k % v != 0 || k < 2 * v)
      v = 1;
    const int64_t p = k / v;
    StageDevices devs = chunkDevices(stageDevices(fn, p, c), k, v);
    // Per op: activation bytes per row of the batch it is elaborated at,
    // and the bytes of the parameters it is first to read.
    auto first = fn.getNumArguments()
                     ? dyn_cast<RankedTensorType>(fn.getArgumentTypes()[0])
                     : RankedTensorType();
    const double rows = first && first.getRank() && first.getShape()[0] > 0
                            ? double(first.getShape()[0])
                            : 1.0;
    DenseMap<Operation *, int64_t> index;
    for (auto [i, op] : llvm::enumerate(compute))
      index[op] = i;
    const int states = optimizerStateCount(fn);
    const int64_t batch = plan::trainBatch(fn);
    SmallVector<double> act(n + 1, 0), params(n + 1, 0);
    double largestParam = 0; // a gradient bucket alone where larger
    for (ParamOp p : fn.getBody().front().getOps<ParamOp>()) {
      int64_t at = n;
      for (Operation *user : p->getUsers())
        at = std::min(at, index.lookup(user));
      if (at < n)
        params[at + 1] += double(tensorBytes(p.getType()));
      largestParam = std::max(largestParam, double(tensorBytes(p.getType())));
    }
    for (auto [i, op] : llvm::enumerate(compute)) {
      auto cost = dyn_cast<CostOpInterface>(op);
      act[i + 1] = act[i] + (cost ? cost.getOutputMemory() / rows : 0);
      params[i + 1] += params[i];
    }
    // Each stage's rows per micro-batch at an even share of the batch, and
    // the micro-batches whose activations it holds (as -whale-balance
    // counts them).
    const int64_t m = settingsOf(fn).microBatches();
    const bool gpipe = settingsOf(fn).gpipe();
    const double micro =
        batch > 0 ? std::ceil(double(batch) / double(m * devs.copies)) : rows;
    // `in`: bytes per row the part receives from earlier parts, held like
    // its own outputs. Every part holds the model's inputs.
    double inputs = 0;
    for (Type t : fn.getArgumentTypes())
      inputs += tensorBytes(t) / rows;
    // Under recomputation a part of n ops holding h micro-batches is cut
    // into about k = sqrt(n / h) segments (at least one): it keeps k / n
    // of its activations as checkpoints for each micro-batch and holds one
    // segment, 1 / k of them, at a time (the balance pass counts the real
    // segments of the chosen cut).
    const bool recompute = plan::recomputes(fn);
    // The optimizer's state (shard_optimizer), and the parameters too
    // (shard_parameters), a copies-th on each copy of a stage, as
    // -whale-balance counts them.
    const double peers = settingsOf(fn).shardsOptimizerState()
                             ? double(std::max<int64_t>(1, devs.copies))
                             : 1.0;
    const double held = settingsOf(fn).getShardParameters() ? 1 / peers : 1.0;
    const double sums = settingsOf(fn).getShardGradients() ? 1 / peers : 1.0;
    // Buckets reduced to their owners during the backward, as -whale-balance
    // counts them.
    const bool reducedInBackward = plan::reducedInBackward(settingsOf(fn), m);
    const double bucket =
        std::max(largestParam, plan::gradientBucketBytes(settingsOf(fn)));
    auto bytes = [&](int64_t i, int64_t a, int64_t e, double in) {
      const double stage = params[e] - params[a];
      const double fixed = plan::fixedBytesOf(
          stage, states / peers, m, held, sums,
          plan::unreducedShare(stage, peers, bucket, reducedInBackward));
      const int64_t inFlight = plan::inFlightOf(i % p, p, m, gpipe, v);
      if (recompute) {
        const double n = double(e - a), all = act[e] - act[a];
        const double k =
            std::clamp(std::sqrt(n / double(inFlight)), 1.0, std::max(n, 1.0));
        return fixed + plan::rowBytesRecomputing(in + all * k / n, all / k,
                                                 inFlight, inputs, m) *
                           micro;
      }
      return fixed +
             plan::rowBytesOf(act[e] - act[a] + in, inFlight, inputs, m) *
                 micro;
    };
    // Per stage, the running sum of its ops' seconds in a step (each op and
    // its backward, the forward twice under recomputation): each op's time
    // without its launch (which -whale-balance does not scale with a share
    // of rows either) on the slowest device of the stage, a c-th of it on
    // each device of a split part.
    const SmallVector<perf::StepOpCosts, 0> step =
        perf::stepCostsOf(compute, fn, ampBf16(fn));
    auto stepSeconds = [&](const perf::StepOpCosts &op,
                           const perf::DeviceModel &m) {
      double t = 0;
      for (const perf::OpCost &cost : op.forward)
        t += (recompute ? 2 : 1) * (perf::opSeconds(cost, m) - m.launchSeconds);
      for (const perf::OpCost &cost : op.backward)
        t += perf::opSeconds(cost, m) - m.launchSeconds;
      return t;
    };
    SmallVector<SmallVector<double>> opSeconds(k,
                                               SmallVector<double>(n + 1, 0));
    for (int64_t i = 0; i < k; ++i)
      for (int64_t x = 0; x < n; ++x) {
        double slowest = 0;
        for (const perf::DeviceModel &m : devs.models[i])
          slowest = std::max(slowest, stepSeconds(step[x], m));
        opSeconds[i][x + 1] = opSeconds[i][x] + slowest / double(c);
      }
    auto seconds = [&](int64_t i, int64_t a, int64_t e) {
      return opSeconds[i][e] - opSeconds[i][a];
    };
    // best[i][e]: the first e ops in i + 1 stages; from[i][e]: where the
    // last of them starts.
    using Score = std::pair<double, double>; // slowest stage, sum of squares
    const Score none = {std::numeric_limits<double>::infinity(), 0};
    SmallVector<SmallVector<Score>> best(k, SmallVector<Score>(n + 1, none));
    SmallVector<SmallVector<int64_t>> from(k, SmallVector<int64_t>(n + 1, -1));
    for (int64_t e = 1; e <= n - (k - 1); ++e)
      if (bytes(0, 0, e, 0) <= devs.room[0]) {
        double t = seconds(0, 0, e);
        best[0][e] = {t, t * t};
        from[0][e] = 0;
      }
    // Growing the part [a, e) op by op: the bytes per row of what it reads
    // from before a (the model's inputs, earlier stages), and whether it
    // fits stage i's device.
    auto partIn = [&](int64_t a, DenseSet<Value> &seen, int64_t e) {
      double in = 0;
      for (Value v : compute[e - 1]->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (!def || isa<ParamOp>(def) || index.lookup(def) >= a ||
            !seen.insert(v).second)
          continue;
        in += tensorBytes(v.getType()) / rows;
      }
      return in;
    };
    // A bound on the slowest stage of the best cut: the cut into equal
    // seconds on the first stage's devices, where it fits. No part slower than
    // it can be on the best path, so the search stops growing a part there
    // (parts only get slower as they grow): about n / k ops a part instead of
    // n.
    double bound = std::numeric_limits<double>::infinity();
    {
      double slowest = 0;
      bool fits = true;
      for (int64_t i = 0, a = 0; i < k && fits; ++i) {
        int64_t e = a + 1;
        const double target = opSeconds[0][n] * double(i + 1) / double(k);
        while (e < n - (k - 1 - i) && opSeconds[0][e] < target)
          ++e;
        if (i == k - 1)
          e = n;
        DenseSet<Value> seen;
        double in = 0;
        for (int64_t x = a + 1; x <= e; ++x)
          in += partIn(a, seen, x);
        fits = e > a && bytes(i, a, e, in) <= devs.room[i];
        slowest = std::max(slowest, seconds(i, a, e));
        a = e;
      }
      if (fits)
        bound = slowest;
    }
    // Where part i may start at the earliest: the ops from there on must
    // still fill parts i..k-1 with none slower than the bound. Each part
    // taken as long as it may be from the back (a part only gets slower as
    // it grows) gives that start. Memory is left to the search below, so
    // no cut it would choose is passed over; on Megatron-LM's 1T plan this
    // kept it to the parts near an even cut (0.19 s of planning before).
    SmallVector<int64_t> earliest(k + 1, 0);
    earliest[k] = n;
    if (bound < std::numeric_limits<double>::infinity()) {
      for (int64_t j = k - 1, e = n; j >= 1; --j) {
        int64_t a = e - 1;
        if (a < j || seconds(j, a, e) > bound) {
          earliest.assign(k + 1, 0); // no part of one op fits: search all
          earliest[k] = n;
          break;
        }
        while (a - 1 >= j && seconds(j, a - 1, e) <= bound)
          --a;
        earliest[j] = e = a;
      }
    }
    for (int64_t i = 1; i < k; ++i)
      for (int64_t a = std::max(i, earliest[i]); a < n; ++a) {
        if (from[i - 1][a] < 0 || best[i - 1][a].first > bound)
          continue;
        DenseSet<Value> seen;
        double in = 0;
        for (int64_t e = a + 1; e <= n - (k - 1 - i); ++e) {
          in += partIn(a, seen, e);
          if (seconds(i, a, e) > bound)
            break;
          if (e < earliest[i + 1] || bytes(i, a, e, in) > devs.room[i])
            continue;
          double t = seconds(i, a, e);
          Score s = {std::max(best[i - 1][a].first, t),
                     best[i - 1][a].second + t * t};
          if (s < best[i][e]) {
            best[i][e] = s;
            from[i][e] = a;
          }
        }
      }
    if (from[k - 1][n] < 0) {
      int64_t tight = 0;
      for (int64_t i = 1; i < k; ++i)
        if (devs.room[i] < devs.room[tight])
          tight = i;
      return fn.emitOpError("auto_parallel cannot cut it into ")
             << k << " TaskGraphs that fit their devices' memory: stage "
             << tight << " (device " << devs.device[tight] << ", "
             << static_cast<int64_t>(devs.room[tight])
             << " bytes) cannot hold its part of the parameters, their "
             << "gradients and optimizer state and the in-flight "
             << "activations beside the others' parts";
    }
    ends.assign(k, n);
    for (int64_t i = k - 1, e = n; i > 0; --i) {
      e = from[i][e];
      ends[i - 1] = e;
    }
    return success();
  }

  LogicalResult cutByCost(func::FuncOp fn, OpBuilder &b, int64_t k, int64_t c) {
    inlineTaskGraphs(fn);
    Block &entry = fn.getBody().front();
    SmallVector<Operation *> compute;
    for (Operation &op : entry.without_terminator())
      if (!isa<ParamOp>(op))
        compute.push_back(&op);
    if (static_cast<int64_t>(compute.size()) < k)
      return fn.emitOpError("cannot be cut into ")
             << k << " TaskGraphs: it has only " << compute.size() << " ops";
    SmallVector<int64_t> ends(givenEnds.begin(), givenEnds.end());
    if (ends.empty()) {
      if (failed(chooseEnds(fn, compute, k, c, ends)))
        return failure();
    } else if (static_cast<int64_t>(ends.size()) != k ||
               ends.back() != static_cast<int64_t>(compute.size()) ||
               !llvm::is_sorted(ends) || ends.front() < 1 ||
               std::adjacent_find(ends.begin(), ends.end()) != ends.end()) {
      return fn.emitOpError("ends must be ")
             << k << " increasing op counts ending at " << compute.size();
    }
    fn->setAttr("whale.cut", b.getDenseI64ArrayAttr(ends));
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
      if (c > 1)
        wrap(b, part, Strategy::split, b.getI64IntegerAttr(c));
      else
        wrap(b, part, Strategy::replicate, IntegerAttr());
      begin = end;
    }
    return success();
  }

  void runOnOperation() override {
    OpBuilder b(&getContext());
    bool ok = plan::forEachModel(getOperation(), [&](func::FuncOp fn) {
      bool automatic = autoParallel;
      SettingsAttr settings = settingsOf(fn);
      automatic = automatic || settings.getAutoParallel();
      int64_t k = numTaskGraph ? numTaskGraph : settings.getNumTaskGraph();
      int64_t c = splitDevices ? splitDevices : settings.getTaskGraphSplit();
      return automatic && k > 0 ? cutByCost(fn, b, k, std::max<int64_t>(c, 1))
                                : wrapLooseOps(fn, b);
    });
    if (!ok)
      signalPassFailure();
  }
};

} // namespace
