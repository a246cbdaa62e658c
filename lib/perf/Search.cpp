//===- Search.cpp - the best plan for a script on a cluster ---------------===//
//
// The space: for N devices, every tensor degree c dividing N (at most a
// node's devices when the cluster has several nodes: tensor parallelism
// talks at every layer), every pipeline degree p dividing N / c (at most
// the model's op count), the rest data parallel (d = N / (c p)). A shard
// group's members take rows of their own (d x c must divide the global
// batch) or share them (split_rows = "whole": d must): both are tried.
// Without a pipeline: one micro-batch, more only when fewer do not fit
// (gradient accumulation saves memory, never time).
// With one: p, 2p, 4p and 8p micro-batches that divide a replica's batch,
// and one sample a micro-batch where the programs stay small enough to
// plan, under GPipe and 1F1B, and 1F1B interleaved over 2 model chunks a
// stage (where the model has the ops and m is a multiple of p); the
// fastest of those once more over 4.
// On devices that differ: balanced and even shares.
// Each with and without activation recomputation, tried only where the
// plan does not fit without it (it saves memory and costs time).
//
// The order: candidates by their least possible time, fastest first, so
// that once K plans are simulated, every later candidate whose bound is
// past the K-th is skipped unplanned. The bound is the model's FLOPs at the
// devices' peak (or the fastest rate any profiled op reached, if faster),
// stretched by the least fill and drain any cut of the pipeline has
// (pipelineStretch) on devices alike. Once a plan of the same layout with a
// divisor of its micro-batches has been simulated (on devices alike, priced
// by the device model), a candidate's bound is also that plan's compute and
// blocking collectives per device: cutting each micro-batch into equal parts
// never makes the device model's work less (see `sameLayout`). So candidates go
// by micro-batches first: the few-micro-batch plans, quick to plan, bound the
// many-micro-batch ones, whose unrolled programs take the longest.
// And once a candidate's cut is planned, before its rank programs are built,
// its stages' products through the pipeline's fill and drain bound it too
// (cutBound): past the K-th best, it is set aside there.
//
//===----------------------------------------------------------------------===//

#include "lib/perf/Search.h"

#include "dialects/Whale/IR/TrainAttrs.h"
#include "dialects/Whale/IR/WhaleOps.h"
#include "lib/compile/Cluster.h"
#include "lib/compile/ModelLookup.h"
#include "lib/compile/Planner.h"
#include "lib/perf/CutBound.h"
#include "lib/perf/Simulate.h"
#include "lowering/Plan.h"
#include "support/Stopwatch.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

namespace whale {

double pipelineStretch(int64_t microBatches, int64_t stages, int64_t chunks) {
  if (stages <= 1 || chunks > 1 || microBatches < 1)
    return 1;
  const double m = double(microBatches), p = double(stages);
  return p / (m * (1 - std::pow(1 - 1 / m, p)));
}

std::string ConfigChoice::text() const {
  if (const auto *t = std::get_if<std::string>(&value))
    return "\"" + *t + "\"";
  return flagValue();
}

std::vector<ConfigChoice> SearchCandidate::config() const {
  if (asWritten)
    return {};
  std::vector<ConfigChoice> c = {{"auto_parallel", true},
                                 {"num_task_graph", pipeline * chunks}};
  if (tensor > 1)
    c.push_back({"task_graph_split", tensor});
  c.push_back({"num_micro_batch", microBatches});
  if (schedule)
    c.push_back({"schedule", stringifyPipelineSchedule(*schedule).str()});
  if (chunks > 1)
    c.push_back({"virtual_stages", chunks});
  if (even)
    c.push_back({"balance", stringifyBalanceKind(BalanceKind::even).str()});
  if (recompute)
    c.push_back({"recompute", true});
  if (shardParameters)
    c.push_back({"shard_parameters", true});
  if (shardGradients)
    c.push_back({"shard_gradients", true});
  if (shardGroup > 0)
    c.push_back({"shard_group", shardGroup});
  if (wholeRows)
    c.push_back({"split_rows", stringifySplitRows(SplitRows::whole).str()});
  if (afterBackward)
    c.push_back(
        {"grad_sync", stringifyGradSync(GradSync::after_backward).str()});
  return c;
}

std::vector<ConfigChoice> SearchCandidate::overrides() const {
  std::vector<ConfigChoice> c = config();
  if (asWritten)
    return c;
  auto set = [&](ConfigChoice choice) {
    for (ConfigChoice &have : c)
      if (have.key == choice.key) {
        have = choice;
        return;
      }
    c.push_back(std::move(choice));
  };
  set({"task_graph_split", tensor});
  set({"virtual_stages", chunks});
  set({"balance",
       stringifyBalanceKind(even ? BalanceKind::even : BalanceKind::hardware)
           .str()});
  set({"recompute", recompute});
  set({"shard_parameters", shardParameters});
  set({"shard_gradients", shardGradients});
  // The script's sharding groups go with its sharding: a candidate
  // sharding nothing, or over every replica, has none.
  set({"shard_group", shardGroup});
  // The script's unit of gathered layers, where its parameters stay whole,
  // back to one layer (gather_layers above 1 needs them sharded).
  if (!shardParameters)
    set({"gather_layers", int64_t(1)});
  set({"split_rows",
       stringifySplitRows(wholeRows ? SplitRows::whole : SplitRows::part)
           .str()});
  set({"grad_sync", stringifyGradSync(afterBackward ? GradSync::after_backward
                                                    : GradSync::overlap)
                        .str()});
  return c;
}

std::string SearchCandidate::label() const {
  std::string s = "dp " + std::to_string(data) + " x tp " +
                  std::to_string(tensor) + " x pp " + std::to_string(pipeline) +
                  ", " + std::to_string(microBatches) + " micro-batch" +
                  (microBatches == 1 ? "" : "es");
  if (schedule)
    s += ", " + stringifyPipelineSchedule(*schedule).str();
  if (chunks > 1)
    s += " interleaved, " + std::to_string(chunks) + " chunks a stage";
  if (even)
    s += ", even";
  if (recompute)
    s += ", recompute";
  if (shardParameters)
    s += ", parameters sharded";
  if (shardGradients)
    s += ", gradients sharded";
  if (shardGroup > 0)
    s += " in groups of " + std::to_string(shardGroup);
  if (wholeRows)
    s += ", rows whole";
  if (afterBackward)
    s += ", sums after backward";
  return asWritten ? "as written: " + s : s;
}

size_t SearchResult::count(SearchCandidate::Outcome o) const {
  return std::count_if(candidates.begin(), candidates.end(),
                       [&](const SearchCandidate &c) { return c.outcome == o; });
}

namespace {

using Outcome = SearchCandidate::Outcome;

/// Stages x micro-batches of the largest plan a candidate of one sample a
/// micro-batch may have: Megatron-LM's 1T plan, 64 stages of 512, plans in
/// about 16 s and 3 GB on 2 cores.
constexpr int64_t kMostUnrolledSteps = 64 * 512;

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t i = 1; i <= n; ++i)
    if (n % i == 0)
      out.push_back(i);
  return out;
}

std::string firstLine(const std::string &text) {
  return text.substr(0, text.find('\n'));
}

/// A planner message that says a part does not fit its device.
bool saysOverMemory(const std::string &error) {
  return error.find("does not fit") != std::string::npos ||
         error.find("fit their devices' memory") != std::string::npos;
}

/// What the space depends on, read once from the script as given.
struct ModelFacts {
  std::string model;
  int64_t globalBatch = 0;
  int64_t ops = 0; ///< compute ops, the most pipeline stages there can be
};

bool readModel(Interpreter &interp, ModelFacts &facts, std::string &error) {
  mlir::func::FuncOp fn = findModel(interp, "", /*needsTrainBlock=*/true, error);
  if (!fn)
    return false;
  facts.model = fn.getName().str();
  facts.globalBatch = plan::trainBatch(fn);
  fn.walk([&](mlir::Operation *op) {
    if (op->getDialect() && op->getDialect()->getNamespace() == "whale" &&
        !mlir::isa<ParamOp, TaskGraphOp, YieldOp>(op))
      ++facts.ops;
  });
  if (facts.globalBatch <= 0) {
    error = "the model '" + facts.model + "' has no data batch to plan for";
    return false;
  }
  return true;
}

/// Whether every device of `cluster` is alike (perf::sameDevice).
bool devicesAlike(const Cluster &cluster) {
  // Devices that leave their threads to the run share the same default.
  return std::all_of(
      cluster.devices.begin(), cluster.devices.end(), [&](const DeviceSpec &d) {
        return perf::sameDevice(describe(d, 1),
                                describe(cluster.devices.front(), 1));
      });
}

/// The candidates the space holds, before any is planned.
std::vector<SearchCandidate> enumerate(const Cluster &cluster,
                                       const ModelFacts &facts) {
  const int64_t n = static_cast<int64_t>(cluster.devices.size());
  int64_t perNode = n;
  if (cluster.nodes.size() > 1) {
    std::map<int, int64_t> onNode;
    for (const DeviceSpec &d : cluster.devices)
      ++onNode[d.node];
    perNode = n;
    for (auto [node, count] : onNode)
      perNode = std::min(perNode, count);
  }
  bool alike = devicesAlike(cluster);
  std::vector<SearchCandidate> out;
  for (int64_t c : divisors(n)) {
    if (c > perNode)
      continue;
    for (int64_t p : divisors(n / c)) {
      if (p > facts.ops)
        continue;
      const int64_t d = n / (c * p);
      // A stage's replicas lie copy after copy (c p devices a copy), so a
      // node of perNode devices holds perNode / p of them when whole
      // copies fit in it: hybrid sharding's groups, where a stage spans
      // more than one node.
      // (Groups of one rank a part shard nothing.)
      const int64_t nodeGroup =
          cluster.nodes.size() > 1 && perNode % (c * p) == 0 &&
                  perNode / p >= 2 * c && d * c > perNode / p &&
                  (d * c) % (perNode / p) == 0
              ? perNode / p
              : 0;
      for (bool wholeRows : {false, true}) {
      if (wholeRows && c == 1)
        continue;
      // A shard group's members take rows of their replica's batch too
      // (the planner's replicas are d x c), so the rows divide by both,
      // unless they share them.
      const int64_t rowsAmong = wholeRows ? d : d * c;
      if (facts.globalBatch % rowsAmong != 0)
        continue;
      const int64_t local = facts.globalBatch / rowsAmong;
      std::vector<int64_t> micro;
      if (p == 1) {
        for (int64_t m = 1; m <= local; m *= 2)
          if (local % m == 0)
            micro.push_back(m);
      } else {
        for (int64_t m = p; m <= local && m <= 8 * p; m *= 2)
          if (local % m == 0)
            micro.push_back(m);
        // One sample a micro-batch, as Megatron-LM runs its pipelines: the
        // least bubble and the least memory in flight. Only where its rank
        // programs (p stages of m micro-batches, unrolled) stay within the
        // largest plan the simulator is measured on (docs/simulation.md).
        if (local > 8 * p && p * local <= kMostUnrolledSteps)
          micro.push_back(local);
      }
      for (int64_t m : micro)
        for (auto [schedule, chunks] : {std::pair<PipelineSchedule, int64_t>{
                                            PipelineSchedule::one_f_one_b, 1},
                                        {PipelineSchedule::gpipe, 1},
                                        {PipelineSchedule::one_f_one_b, 2}}) {
          if (p == 1 && (schedule == PipelineSchedule::gpipe || chunks > 1))
            continue;
          // Interleaving runs micro-batches in groups of p, and each chunk
          // needs an op of its own.
          if (chunks > 1 && (m % p != 0 || p * chunks > facts.ops))
            continue;
          for (bool even : {false, true})
            for (bool recompute : {false, true}) {
              if (even && alike)
                continue;
              SearchCandidate k;
              k.data = d;
              k.tensor = c;
              k.pipeline = p;
              k.microBatches = m;
              if (p > 1)
                k.schedule = schedule;
              k.chunks = chunks;
              k.even = even;
              k.recompute = recompute;
              k.wholeRows = wholeRows;
              k.nodeGroup = nodeGroup;
              out.push_back(k);
              // ZeRO stages 2 and 3 where there are replicas to shard over
              // (stage 2 where they accumulate micro-batches), right after
              // their twin, which sets them aside where it fits; each
              // sharded within nodes first where a stage spans several.
              auto sharded = [&](SearchCandidate s) {
                if (s.nodeGroup > 0) {
                  s.shardGroup = s.nodeGroup;
                  out.push_back(s);
                  s.shardGroup = 0;
                }
                out.push_back(s);
              };
              if (d > 1 && m > 1) {
                k.shardGradients = true;
                sharded(k);
                k.shardGradients = false;
              }
              if (d > 1) {
                k.shardParameters = true;
                sharded(k);
              }
              if (d > 1 && m > 1) {
                k.shardGradients = true;
                sharded(k);
              }
            }
        }
      }
    }
  }
  return out;
}

/// The first and last parameter of each stage of a planned model (of each
/// of its chunks, under an interleaved schedule), and the stage's share of
/// the parameters' bytes.
std::vector<std::string> stageSummary(const PlannedModel &plan) {
  auto fn = plan.planned.get().lookupSymbol<mlir::func::FuncOp>(plan.model);
  // Per stage, per chunk in order: its first and last parameter.
  std::vector<std::map<int64_t, std::pair<std::string, std::string>>> spans(
      plan.stages);
  std::vector<double> bytes(plan.stages, 0);
  double total = 0;
  for (TaskGraphOp tg : plan::taskGraphs(fn)) {
    auto stage = tg->getAttrOfType<mlir::IntegerAttr>("stage");
    auto chunk = tg->getAttrOfType<mlir::IntegerAttr>("chunk");
    int64_t s = stage ? stage.getInt() : 0;
    if (s < 0 || s >= plan.stages)
      continue;
    tg.walk([&](ParamOp p) {
      auto &[first, last] = spans[s][chunk ? chunk.getInt() : 0];
      if (first.empty())
        first = p.getName().str();
      last = p.getName().str();
      double b = double(tensorBytes(p.getType()));
      bytes[s] += b;
      total += b;
    });
  }
  std::vector<std::string> out;
  for (int64_t s = 0; s < plan.stages; ++s) {
    char share[32];
    std::snprintf(share, sizeof share, "%.1f%%",
                  total > 0 ? 100 * bytes[s] / total : 0.0);
    std::string text;
    for (const auto &[chunk, span] : spans[s])
      text += (text.empty() ? "" : ", ") + span.first + " .. " + span.second;
    out.push_back(text.empty() ? std::string("no parameters")
                               : text + " (" + share + " of the parameters)");
  }
  return out;
}

/// What one simulated plan teaches the lower bound: its FLOPs, and the
/// devices' summed peak (or the fastest rate an op of it reached).
struct Learned {
  bool any = false;
  double modelFlops = 0, peakSum = 0;
  bool alike = true;
  /// The mean seconds a device computes or transfers in the collectives it
  /// waits in, over the iteration (0 where the bound may not carry it: a
  /// profile priced it, or devices differ).
  double busyPerDevice = 0;
};

/// A candidate's layout apart from its micro-batches and schedule: plans of
/// one layout run the same ops on the same devices, each micro-batch's at
/// rows a divisor of the micro-batches fewer. The device model prices a
/// product by its tiles' waves (a ceiling of tiles over units, tiles a
/// ceiling of rows over the tile, or its depth plus a tile), and every other
/// op by its launch plus the larger of its FLOPs and bytes, each a sum over
/// rows and a part that does not shrink with them: cut a micro-batch into
/// equal parts and the parts together take at least what the whole did.
/// So do the collectives a rank waits in (a latency per call plus the
/// bytes over the link). So a plan of m micro-batches computes and
/// transfers no less than one of the same layout with a divisor of m (up
/// to the few ops a stage boundary adds, where memory cuts the two plans
/// differently), and its iteration, at least its devices' mean of both, is
/// no shorter than that plan's mean. Learned from plans without recomputation
/// only (its segments follow the micro-batches a stage holds), it bounds both:
/// recomputation only adds forward ops.
/// (A plan with its parameters or its gradients sharded moves other
/// bytes, the latter once per micro-batch: a layout of its own.)
using Layout = std::tuple<int64_t, int64_t, int64_t, int64_t, bool, bool, bool,
                          bool, bool, int64_t>;
std::optional<Layout> sameLayout(const SearchCandidate &k) {
  if (k.asWritten)
    return std::nullopt;
  return std::make_tuple(k.data, k.tensor, k.pipeline, k.chunks, k.even,
                         k.wholeRows, k.afterBackward, k.shardParameters,
                         k.shardGradients, k.shardGroup);
}

/// Plans and simulates the script with `k`'s config keys added. `run` only
/// reads the evaluator, so candidates run side by side; what they teach
/// the bound is applied in the order the search considers them (`learn`).
class Evaluator {
public:
  Evaluator(const std::string &file, const InterpreterOptions &options,
            const Cluster &cluster, const SearchOptions &search,
            const std::string &model)
      : file(file), options(options), cluster(cluster), search(search),
        model(model) {
    // The cut's bound prices products as the device model does: on devices
    // alike, without a profile (measured times need not add up so).
    sim::Topology topology = topologyOf(cluster, search.defaultThreads);
    const std::vector<perf::DeviceModel> &devices = topology.devices;
    if (search.boundByCut && !search.profile && !devices.empty() &&
        devicesAlike(cluster))
      cutTopology = std::move(topology);
  }

  /// The K-th best time found so far (infinite until K are): only ever
  /// falls, so a candidate planned ahead of its turn whose cut is past it
  /// now is past it at its turn too.
  void setKthBest(double seconds) { kthBest.store(seconds); }
  /// Why a candidate set aside by its cut was: the same words whether it
  /// was planned ahead of its turn or in it.
  std::string cutReason() const {
    return "its cut cannot beat the " + std::to_string(search.top) +
           " fastest found";
  }

  /// Plans and simulates `k`; where `mayCut`, sets it aside (Bound) once
  /// its cut is planned if that cannot beat the K-th best found by then.
  void run(SearchCandidate &k, Learned &learned, bool mayCut) const {
    InterpreterOptions o = options;
    // What the candidate decides is its own to say, whatever the script's
    // config block says: its printed config names only what differs from
    // the defaults.
    for (const ConfigChoice &c : k.overrides())
      o.configs[c.key] = c.value;
    Interpreter interp(o);
    if (!interp.loadFile(file) || !interp.module()) {
      k.outcome = Outcome::Failed;
      k.reason = firstLine(interp.renderDiagnostics());
      return;
    }
    PlannedModel plan;
    PlanOptions planOptions;
    planOptions.defaultThreads = search.defaultThreads;
    planOptions.verify = false;
    bool cut = false;
    if (cutTopology)
      planOptions.beforeRankPrograms = [&](mlir::func::FuncOp planned,
                                           std::string &why) {
        k.cutBound = cutBound(planned, *cutTopology);
        if (!mayCut || k.cutBound <= kthBest.load())
          return true;
        cut = true;
        why = cutReason();
        return false;
      };
    std::string error;
    if (!planModel(interp, model, cluster, planOptions, plan, error)) {
      if (cut) {
        k.outcome = Outcome::Bound;
        k.reason = error;
        return;
      }
      k.outcome = saysOverMemory(error) ? Outcome::OverMemory : Outcome::Failed;
      k.reason = firstLine(error);
      return;
    }
    if (k.asWritten)
      readDegrees(plan, k);
    SimulateOptions simOptions;
    simOptions.defaultThreads = search.defaultThreads;
    simOptions.profile = search.profile;
    Simulation sim;
    if (!simulatePlan(plan, cluster, simOptions, sim, error)) {
      k.outcome = Outcome::Failed;
      k.reason = firstLine(error);
      return;
    }
    k.outcome = Outcome::Simulated;
    k.iterationSeconds = sim.iterationSeconds();
    k.samplesPerSecond = double(sim.globalBatch) / k.iterationSeconds;
    k.tokensPerSecond = k.samplesPerSecond * double(sim.tokensPerSample);
    k.mfu = sim.mfu();
    k.bubble = sim.result.bubbleFraction;
    for (int64_t b : plan.deviceMemory)
      k.peakMemory = std::max(k.peakMemory, b);
    k.stages = stageSummary(plan);
    learned = boundTerms(sim, search.profile);
  }

  /// Adds what a simulated plan taught to the bound.
  void learn(const Learned &l) {
    if (!l.any)
      return;
    leastFlops =
        leastFlops > 0 ? std::min(leastFlops, l.modelFlops) : l.modelFlops;
    peakSum = std::max(peakSum, l.peakSum);
    alike = l.alike;
  }
  /// Adds what `k`, simulated, computed and transferred to what bounds its
  /// layout.
  void learn(const SearchCandidate &k, const Learned &l) {
    learn(l);
    if (std::optional<Layout> layout = sameLayout(k);
        layout && !k.recompute && l.busyPerDevice > 0)
      busyOf[*layout].push_back({k.microBatches, l.busyPerDevice});
  }

  /// The least time `k` could take; 0 until a plan has been simulated.
  double lowerBound(const SearchCandidate &k) const {
    double t = 0;
    if (leastFlops > 0 && peakSum > 0) {
      t = leastFlops / peakSum;
      if (alike)
        t *= k.fillAndDrain();
    }
    if (std::optional<Layout> layout = sameLayout(k)) {
      auto it = busyOf.find(*layout);
      if (it != busyOf.end())
        for (const auto &[m, seconds] : it->second)
          if (k.microBatches % m == 0)
            t = std::max(t, seconds);
    }
    return t;
  }
  /// Whether `before`, once simulated, may raise `k`'s bound: the same
  /// layout, and a divisor of its micro-batches.
  static bool bounds(const SearchCandidate &before, const SearchCandidate &k) {
    std::optional<Layout> a = sameLayout(before), b = sameLayout(k);
    return a && b && *a == *b && !before.recompute &&
           k.microBatches % before.microBatches == 0;
  }

private:
  /// The degrees of the script's own plan.
  static void readDegrees(const PlannedModel &plan, SearchCandidate &k) {
    auto fn = plan.planned.get().lookupSymbol<mlir::func::FuncOp>(plan.model);
    int64_t shards = 1;
    const ModelPlan planned = ModelPlan::of(fn);
    if (std::optional<llvm::ArrayRef<int64_t>> s = planned.shards())
      for (int64_t c : *s)
        shards = std::max(shards, c);
    k.tensor = shards;
    k.wholeRows = plan.rowGroup > 1;
    k.pipeline = plan.stages;
    k.data = std::max<int64_t>(1, plan.replicas / shards);
    k.microBatches = plan.microBatches;
    if (plan.stages > 1)
      k.schedule = symbolizePipelineSchedule(plan.schedule);
    k.chunks = planned.chunks().value_or(1);
    k.afterBackward = !settingsOf(plan.planned.get()).overlapGradSync();
  }

  /// The bound's terms: the fewest FLOPs any plan has needed (replicated
  /// ops in shard groups add some), and the devices' summed peak, or the
  /// fastest rate a profiled op reached on them (in the plan, or a product
  /// in the profile) if that is higher.
  static Learned boundTerms(const Simulation &sim,
                            const sim::ProfileDb *profile) {
    Learned l;
    l.any = true;
    l.modelFlops = sim.modelFlops;
    double fastest = 0;
    for (size_t e = 0; e < sim.events.size(); ++e) {
      const sim::EventTotal &t = sim.result.perEvent[e];
      const sim::Event &ev = sim.events[e];
      if (ev.kind == sim::StepKind::Compute && t.seconds > 0 && t.count > 0)
        fastest =
            std::max(fastest, ev.cost.flops * double(t.count) / t.seconds);
    }
    const auto &devices = sim.topology.devices;
    // A product priced from the profile's nearest timed one is no faster
    // than the fastest product it timed on that device.
    for (const perf::DeviceModel &d : devices)
      l.peakSum += std::max(
          {d.matmulFlops, d.matmulFlopsBf16, fastest,
           profile ? profile->fastestProductRate(sim::ProfileDb::deviceKey(d))
                   : 0.0});
    l.alike = std::all_of(devices.begin(), devices.end(),
                          [&](const perf::DeviceModel &d) {
                            return d.matmulFlops == devices.front().matmulFlops;
                          });
    // A profile's times need not add up as the device model's do.
    if (l.alike && !profile && !devices.empty()) {
      double busy = 0;
      for (const sim::SimRank &r : sim.result.ranks)
        busy += (r.computeSeconds + r.collectiveSeconds) * double(r.likeIt);
      l.busyPerDevice = busy / double(devices.size());
    }
    return l;
  }

  const std::string &file;
  const InterpreterOptions &options;
  const Cluster &cluster;
  const SearchOptions &search;
  std::string model;
  double leastFlops = 0, peakSum = 0;
  bool alike = true;
  /// Per layout: each simulated plan's micro-batches and busy seconds per
  /// device.
  std::map<Layout, std::vector<std::pair<int64_t, double>>> busyOf;
  /// The devices where the cut's bound holds (alike, no profile).
  std::optional<sim::Topology> cutTopology;
  std::atomic<double> kthBest{std::numeric_limits<double>::infinity()};
};

} // namespace

bool searchPlans(const std::string &file, const InterpreterOptions &options,
                 const Cluster &cluster, const SearchOptions &search,
                 SearchResult &out, std::string &error) {
  auto start = std::chrono::steady_clock::now();
  Interpreter base(options);
  if (!base.loadFile(file) || !base.module()) {
    error = base.renderDiagnostics();
    return false;
  }
  ModelFacts facts;
  if (!readModel(base, facts, error))
    return false;
  out.model = facts.model;
  out.script = file;
  out.devices = static_cast<int64_t>(cluster.devices.size());
  out.globalBatch = facts.globalBatch;

  std::vector<SearchCandidate> space = enumerate(cluster, facts);
  // Fewer micro-batches first: quicker to plan, and they bound the plans of
  // their layout with more. Among equals, fill and drain: the order the
  // FLOPs bound grows in (stable: smaller tensor degrees first).
  std::stable_sort(space.begin(), space.end(),
                   [](const SearchCandidate &a, const SearchCandidate &b) {
                     if (a.microBatches != b.microBatches)
                       return a.microBatches < b.microBatches;
                     return a.fillAndDrain() < b.fillAndDrain();
                   });
  SearchCandidate written;
  written.asWritten = true;
  space.insert(space.begin(), written);

  Evaluator evaluator(file, options, cluster, search, facts.model);
  std::vector<double> times; // simulated, sorted
  // Without a pipeline, (d, c, even, recompute) whose fewest micro-batches
  // fit (more micro-batches are dominated, and so are more with
  // recomputation where fewer fit without); and every plan that fits
  // without recomputation.
  std::set<std::tuple<int64_t, int64_t, bool, bool, bool, bool, bool, int64_t>>
      fitted;
  std::set<std::string> fitsKeeping, fitsAtAll;
  auto withoutRecompute = [](SearchCandidate k) {
    k.recompute = false;
    return k.label();
  };
  // The plan `k` shards less than: whole parameters and gradients for
  // stage 2 or 3 alone, stage 3 alone for both; and where a stage spans
  // several nodes, sharding over all its replicas shards more than within
  // nodes, which shards more than those.
  auto lessSharded = [](SearchCandidate k) {
    if (k.nodeGroup > 0 && k.shardGroup == 0) {
      k.shardGroup = k.nodeGroup;
      return k.label();
    }
    k.shardGroup = 0;
    if (k.shardParameters && k.shardGradients)
      k.shardGradients = false;
    else
      k.shardParameters = k.shardGradients = false;
    return k.label();
  };
  // Sharding the parameters or the gradients only costs time (the same
  // work, and gathers or a reduction per micro-batch besides): it is
  // tried where the same plan sharding less was refused for memory, and
  // set aside where that plan fits, could not beat the fastest found or
  // was itself set aside.
  std::set<std::string> wholeOverMemory;
  const size_t total = space.size();
  // Why `k` is not planned, given what the candidates before it found;
  // nullopt when it is to be planned and simulated.
  auto setAside = [&](const SearchCandidate &k)
      -> std::optional<std::pair<Outcome, std::string>> {
    if (k.asWritten)
      return std::nullopt;
    auto key =
        std::make_tuple(k.data, k.tensor, k.wholeRows, k.even, k.recompute,
                        k.shardParameters, k.shardGradients, k.shardGroup);
    auto keeping =
        std::make_tuple(k.data, k.tensor, k.wholeRows, k.even, false,
                        k.shardParameters, k.shardGradients, k.shardGroup);
    if (k.recompute && fitsKeeping.count(withoutRecompute(k)))
      return std::make_pair(Outcome::Dominated,
                            std::string("fits without recomputation"));
    if ((k.shardParameters || k.shardGradients) &&
        !wholeOverMemory.count(lessSharded(k)))
      return std::make_pair(
          Outcome::Dominated,
          std::string(fitsAtAll.count(lessSharded(k))
                          ? "fits sharding less"
                          : "its plan sharding less was not refused for "
                            "memory"));
    if (k.pipeline == 1 && (fitted.count(key) || fitted.count(keeping)))
      return std::make_pair(Outcome::Dominated,
                            std::string("fewer micro-batches fit"));
    if (static_cast<int>(times.size()) >= search.top &&
        evaluator.lowerBound(k) > times[search.top - 1])
      return std::make_pair(Outcome::Bound, "cannot beat the " +
                                                std::to_string(search.top) +
                                                " fastest found");
    return std::nullopt;
  };

  // Whether `a`, when it fits, sets `b` aside as dominated.
  auto dominates = [&](const SearchCandidate &a, const SearchCandidate &b) {
    if (a.asWritten || b.asWritten)
      return false;
    if (b.recompute && !a.recompute && a.label() == withoutRecompute(b))
      return true;
    if ((b.shardParameters || b.shardGradients) && a.label() == lessSharded(b))
      return true;
    return a.pipeline == 1 && b.pipeline == 1 && a.data == b.data &&
           a.tensor == b.tensor && a.wholeRows == b.wholeRows &&
           a.even == b.even && a.shardParameters == b.shardParameters &&
           a.shardGradients == b.shardGradients &&
           a.shardGroup == b.shardGroup && (!a.recompute || b.recompute);
  };

  // Candidates are planned side by side, `jobs` at a time, each ahead of
  // its turn once what came before does not set it aside and no candidate
  // still undecided before it could (the plans after one that fits are
  // mostly dominated by it); their results are taken in order, with the
  // same decisions as one at a time: a candidate set aside in its turn
  // drops what was planned ahead (its bound may have risen past the best
  // since), and one not planned ahead is planned then.
  const unsigned jobs = search.jobs > 0
                            ? unsigned(search.jobs)
                            : std::max(1u, std::thread::hardware_concurrency());
  struct Ahead {
    SearchCandidate k;
    Learned learned;
    std::thread worker;
  };
  std::vector<std::unique_ptr<Ahead>> ahead(total);
  constexpr size_t kLookahead = 64;
  size_t running = 0;
  auto startAhead = [&](size_t j) {
    auto a = std::make_unique<Ahead>();
    a->k = space[j];
    Ahead *raw = a.get();
    a->worker = std::thread(
        [&evaluator, raw] { evaluator.run(raw->k, raw->learned, true); });
    ahead[j] = std::move(a);
    ++running;
  };
  auto finish = [&](size_t j) {
    ahead[j]->worker.join();
    --running;
  };
  for (size_t i = 0; i < total; ++i) {
    SearchCandidate &k = space[i];
    for (size_t j = i;
         jobs > 1 && running < jobs && j < std::min(total, i + kLookahead);
         ++j) {
      if (ahead[j] || setAside(space[j]))
        continue;
      bool waits = false;
      for (size_t a = i; a < j && !waits; ++a)
        waits = dominates(space[a], space[j]) ||
                Evaluator::bounds(space[a], space[j]);
      if (!waits)
        startAhead(j);
    }
    if (auto aside = setAside(k)) {
      k.outcome = aside->first;
      k.reason = aside->second;
      if (k.outcome == Outcome::Bound)
        k.lowerBound = evaluator.lowerBound(k);
    } else {
      Learned learned;
      if (ahead[i]) {
        finish(i);
        const SearchCandidate &done = ahead[i]->k;
        if (done.outcome == Outcome::Simulated &&
            static_cast<int>(times.size()) >= search.top &&
            done.cutBound > times[search.top - 1]) {
          // Planned ahead of its turn against a K-th best that has fallen
          // since: set aside as it is in its turn, teaching nothing.
          k.outcome = Outcome::Bound;
          k.reason = evaluator.cutReason();
          k.cutBound = done.cutBound;
        } else {
          k = std::move(ahead[i]->k);
          learned = ahead[i]->learned;
        }
      } else {
        evaluator.run(k, learned, true);
      }
      if (k.outcome == Outcome::Simulated)
        evaluator.learn(k, learned);
      else
        evaluator.learn(learned);
      k.lowerBound = std::max(evaluator.lowerBound(k), k.cutBound);
      // Every plan refused for memory lets the ones sharding more be tried.
      if (!k.asWritten && k.outcome == Outcome::OverMemory)
        wholeOverMemory.insert(k.label());
      if (k.outcome == Outcome::Simulated) {
        times.insert(std::upper_bound(times.begin(), times.end(),
                                      k.iterationSeconds),
                     k.iterationSeconds);
        if (static_cast<int>(times.size()) >= search.top)
          evaluator.setKthBest(times[search.top - 1]);
        auto key =
            std::make_tuple(k.data, k.tensor, k.wholeRows, k.even, k.recompute,
                            k.shardParameters, k.shardGradients, k.shardGroup);
        if (!k.asWritten && k.pipeline == 1)
          fitted.insert(key);
        if (!k.asWritten && !k.recompute)
          fitsKeeping.insert(k.label());
        if (!k.asWritten)
          fitsAtAll.insert(k.label());
      }
    }
    if (ahead[i] && ahead[i]->worker.joinable())
      finish(i);
    ahead[i].reset();
    if (search.progress)
      search.progress(i + 1, total, k);
  }

  size_t simulated = 0;
  auto rank = [&] {
    std::stable_partition(space.begin(), space.end(), [](const auto &k) {
      return k.outcome == Outcome::Simulated;
    });
    simulated = std::count_if(space.begin(), space.end(), [](auto &k) {
      return k.outcome == Outcome::Simulated;
    });
    // Fastest first; among equal times the one holding less memory.
    std::stable_sort(space.begin(), space.begin() + simulated,
                     [](const SearchCandidate &a, const SearchCandidate &b) {
                       if (a.iterationSeconds != b.iterationSeconds)
                         return a.iterationSeconds < b.iterationSeconds;
                       return a.peakMemory < b.peakMemory;
                     });
  };
  rank();

  // Second passes: the `top` fastest plans a test picks, planned and
  // simulated once more as `vary` changes them, and ranked among the rest.
  size_t tried = total;
  auto refine = [&](auto picks, auto vary) {
    std::vector<SearchCandidate> variants;
    for (size_t i = 0;
         i < simulated && variants.size() < static_cast<size_t>(search.top);
         ++i)
      if (!space[i].asWritten && picks(space[i])) {
        SearchCandidate v;
        v.data = space[i].data;
        v.tensor = space[i].tensor;
        v.pipeline = space[i].pipeline;
        v.microBatches = space[i].microBatches;
        v.schedule = space[i].schedule;
        v.chunks = space[i].chunks;
        v.even = space[i].even;
        v.recompute = space[i].recompute;
        v.shardParameters = space[i].shardParameters;
        v.shardGradients = space[i].shardGradients;
        v.shardGroup = space[i].shardGroup;
        v.nodeGroup = space[i].nodeGroup;
        v.wholeRows = space[i].wholeRows;
        v.afterBackward = space[i].afterBackward;
        vary(v);
        variants.push_back(v);
      }
    for (size_t first = 0; first < variants.size(); first += jobs) {
      const size_t last = std::min(variants.size(), first + jobs);
      std::vector<Learned> learned(last - first);
      std::vector<std::thread> workers;
      for (size_t j = first; j < last; ++j)
        workers.emplace_back(
            [&, j] { evaluator.run(variants[j], learned[j - first], false); });
      for (std::thread &w : workers)
        w.join();
      for (size_t j = first; j < last; ++j) {
        variants[j].lowerBound =
            std::max(evaluator.lowerBound(variants[j]), variants[j].cutBound);
        if (search.progress)
          search.progress(tried + j + 1, tried + variants.size(), variants[j]);
      }
    }
    tried += variants.size();
    space.insert(space.end(), variants.begin(), variants.end());
    rank();
  };
  // The fastest pipelines interleaved over 2 chunks a stage, over 4: each
  // halves the bubble again for twice the messages and more activations in
  // flight, which only the simulation weighs. Tried on the best alone, as
  // the first pass would twice over on every pipeline.
  refine(
      [&](const SearchCandidate &k) {
        return k.chunks == 2 && k.pipeline * 4 <= facts.ops;
      },
      [](SearchCandidate &v) { v.chunks = 4; });
  // The fastest plans with data parallelism, their gradient sums after the
  // whole backward. Overlapping the sums with the backward mostly wins, but
  // not always: on a pipeline a sum placed inside a micro-batch's backward
  // lengthens the path every micro-batch waits on, and where ranks share a
  // machine's cores the collective thread takes them from the compute. The
  // same memory either way (the sums are made in the same place), so only
  // the time can differ.
  refine(
      [](const SearchCandidate &k) { return k.data > 1 && !k.afterBackward; },
      [](SearchCandidate &v) { v.afterBackward = true; });
  out.candidates = std::move(space);
  out.seconds = secondsSince(start);
  if (simulated == 0) {
    error = "no plan of the " + std::to_string(total) +
            " tried could be simulated";
    for (const SearchCandidate &k : out.candidates)
      if (!k.reason.empty()) {
        error += "; e.g. " + k.label() + ": " + k.reason;
        break;
      }
    return false;
  }
  return true;
}

} // namespace whale
