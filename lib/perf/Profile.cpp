//===- Profile.cpp - timing a plan's events on the real devices -----------===//

#include "lib/perf/Profile.h"

#include "dialects/Whale/IR/TrainAttrs.h"
#include "dialects/Whale/IR/WhaleOps.h"
#include "lib/compile/Cluster.h"
#include "lib/compile/Jit.h"
#include "runtime/core/CpuPlacement.h"
#include "runtime/run/RankStep.h"
#include "sim/Extract.h"
#include "support/InputFile.h"
#include "whale/Train.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <thread>
#include <unistd.h>

#ifndef WHALE_COMMIT
#define WHALE_COMMIT "unknown"
#endif

namespace whale {
namespace {

using ContextPtr =
    std::unique_ptr<whale_rt_context, void (*)(whale_rt_context *)>;

/// Whether the profiler can run `op` alone: ops that talk to a group (a
/// shard group, an update's owners, a started all-reduce) need a
/// communicator, and clipping hands its operands' tensors on as its
/// results (which a one-op program would release): the models price them,
/// and the profile's run in context times them.
bool runsAlone(mlir::Operation *op) {
  auto cost = llvm::dyn_cast<CostOpInterface>(op);
  return cost && cost.getCommBytes() == 0 && !op->hasAttr("shards") &&
         !op->hasAttr("owner") &&
         !llvm::isa<ClipGradNormOp, AllReduceStartOp, AllReduceWaitOp,
                    BroadcastOp, GatherParamsOp, GatherParamsStartOp,
                    GatherParamsWaitOp, AddIntoOwnersOp>(op);
}

/// One function per compute event first read in `ctx` (each shape of rank
/// has a context of its own), `event<i>`, that runs its op on its
/// arguments. It returns the op's first result, or a scalar where the op
/// has none (an update in place).
mlir::OwningOpRef<mlir::ModuleOp>
probeModule(mlir::MLIRContext *ctx,
            const std::vector<mlir::Operation *> &firstOps) {
  mlir::OpBuilder b(ctx);
  mlir::Location loc = b.getUnknownLoc();
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  for (size_t i = 0; i < firstOps.size(); ++i) {
    mlir::Operation *op = firstOps[i];
    if (!op || op->getContext() != ctx || !runsAlone(op))
      continue;
    bool ownResult = op->getNumResults() > 0;
    mlir::Type scalar = mlir::RankedTensorType::get({}, b.getF32Type());
    mlir::Type result = ownResult ? op->getResult(0).getType() : scalar;
    auto fn = mlir::func::FuncOp::create(
        b, loc, "event" + std::to_string(i),
        b.getFunctionType(op->getOperandTypes(), {result}));
    fn->setAttr("whale.rank", b.getDictionaryAttr({}));
    mlir::OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(fn.addEntryBlock());
    mlir::Operation *clone = b.clone(*op);
    for (auto [k, operand] : llvm::enumerate(clone->getOpOperands()))
      operand.set(fn.getArgument(k));
    mlir::Value out = ownResult
                          ? mlir::Value(clone->getResult(0))
                          : mlir::Value(ConstantOp::create(b, loc, scalar,
                                                           b.getF64FloatAttr(0))
                                            .getResult());
    mlir::func::ReturnOp::create(b, loc, out);
  }
  return module;
}

std::string machineName() {
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  std::string cpu;
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);)
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return std::string(host) + ", " + std::to_string(cores) + " cores" +
         (cpu.empty() ? "" : ", " + cpu);
}

std::string nowUtc() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

/// Runs `entry` on `inputs` until it has run long and often enough; the
/// median seconds of one call, or a negative number with `error` set.
double timeEntry(JitProgram::Entry entry, whale_rt_context *ctx,
                 std::vector<whale_rt_tensor *> &inputs,
                 const ProfileOptions &options, int64_t &runs,
                 std::string &error) {
  auto once = [&]() -> double {
    auto t0 = std::chrono::steady_clock::now();
    whale_rt_tensor *result = nullptr;
    if (entry(ctx, inputs.data(), &result) != 0) {
      error = whale_rt_last_error(ctx);
      return -1;
    }
    // Reading one value waits for a device that runs asynchronously.
    float sink;
    whale_rt_tensor_read(ctx, result, &sink, sizeof sink);
    auto t1 = std::chrono::steady_clock::now();
    whale_rt_tensor_release(ctx, result);
    return std::chrono::duration<double>(t1 - t0).count();
  };
  if (once() < 0) // warm the caches and the allocator
    return -1;
  std::vector<double> times;
  double total = 0;
  while ((total < options.secondsPerEvent ||
          static_cast<int>(times.size()) < options.minRuns) &&
         times.size() < 10000) {
    double t = once();
    if (t < 0)
      return -1;
    times.push_back(t);
    total += t;
  }
  std::sort(times.begin(), times.end());
  runs = static_cast<int64_t>(times.size());
  return times[times.size() / 2];
}

/// Inputs of `fn`'s types: floats 0.5 (no zeros for logs and square roots),
/// integers 0 (a valid row or class).
bool makeInputs(whale_rt_context *ctx, mlir::func::FuncOp fn,
                std::vector<whale_rt_tensor *> &out, std::string &error) {
  for (mlir::Type t : fn.getArgumentTypes()) {
    auto type = mlir::cast<mlir::RankedTensorType>(t);
    whale_rt_tensor *tensor = newTensor(ctx, type, error);
    if (!tensor)
      return false;
    out.push_back(tensor);
    int64_t n = type.getNumElements();
    std::vector<float> floats;
    std::vector<int32_t> ints;
    const void *data;
    if (type.getElementType().isF32()) {
      floats.assign(n, 0.5f);
      data = floats.data();
    } else {
      ints.assign(n, 0);
      data = ints.data();
    }
    if (whale_rt_tensor_write(ctx, tensor, data, 4 * n) != WHALE_RT_OK) {
      error = whale_rt_last_error(ctx);
      return false;
    }
  }
  return true;
}

/// One event's times in a traced run: per place it ran at (a device or a
/// stage, and a site), its time in each step kept.
using BySite = std::map<std::pair<int64_t, int64_t>, std::vector<double>>;

/// An event's time from its places: the mean over the kept steps at each
/// place, then over the places. Over places, because the replay charges
/// every place the one time: the op after a collective or at a stage's
/// start carries a longer gap than its twins, and the step holds each.
sim::ProfileDb::Entry meanOverSites(const BySite &bySite) {
  double sum = 0;
  int64_t samples = 0;
  for (const auto &[place, times] : bySite) {
    double t = 0;
    for (double x : times)
      t += x;
    sum += t / static_cast<double>(times.size());
    samples += static_cast<int64_t>(times.size());
  }
  return {sum / static_cast<double>(bySite.size()), samples,
          /*inContext=*/true};
}

/// The steps (by number, the first being 1) whose times are kept: from the
/// second on, those whose length lies in the middle half of the lengths.
/// On a shared machine a slow spell (another tenant's burst) spans whole
/// steps, and the typical step is what `whale run` sustains and the
/// accuracy bench measures; a median per op instead would lose the small
/// delays every step has (a sum of medians falls short of the median sum).
std::set<size_t>
typicalSteps(const std::vector<std::pair<double, double>> &steps) {
  std::vector<std::pair<double, size_t>> lengths;
  for (size_t i = 1; i < steps.size(); ++i)
    lengths.push_back({steps[i].second - steps[i].first, i + 1});
  std::sort(lengths.begin(), lengths.end());
  const size_t quarter = lengths.size() / 4;
  std::set<size_t> kept;
  for (size_t i = quarter; i < lengths.size() - quarter; ++i)
    kept.insert(lengths[i].second);
  return kept;
}

/// The event each traced op stands for: by the program it ran (the module
/// of its replica's shape, its stage) and its place in it.
class SiteMap {
public:
  SiteMap(const PlannedModel &plan, const std::vector<mlir::ModuleOp> &modules,
          const std::vector<sim::ProgramSet> &sets,
          const sim::EventTable &table) {
    // A started all-reduce's site names two events: the packing (compute)
    // and the sum (a collective).
    for (size_t m = 0; m < sets.size(); ++m)
      for (const sim::StageProgram &p : sets[m].stages)
        for (const sim::Step &s : p.steps)
          if (s.site >= 0)
            events[{m, p.stage, s.site,
                    table[s.event].kind == sim::StepKind::Collective}] =
                s.event;
    // Each device's stage and the programs of its replica's shape.
    for (int64_t s = 0; s < plan.stages; ++s)
      for (int64_t r = 0; r < plan.replicas; ++r) {
        size_t m = std::find(modules.begin(), modules.end(), plan.ranksOf(r)) -
                   modules.begin();
        placement[plan.grid[s * plan.replicas + r]] = {s, m};
        replicaOf[plan.grid[s * plan.replicas + r]] = r;
      }
  }
  /// Which group of its stage's ranks device `device` meets in for
  /// collective `e`: the ranks of one shard group, of one shard's peers,
  /// all the replicas, or the stages of its replica.
  int64_t groupOf(int64_t device, const sim::Event &e) const {
    auto it = replicaOf.find(device);
    int64_t r = it == replicaOf.end() ? 0 : it->second;
    int64_t k = std::max<int64_t>(1, e.shards);
    // A sharding group's collective meets in it; a reduce to owners over
    // sharding groups spans them all.
    const int64_t cut = e.collective == sim::Collective::ReduceScatter
                            ? 0
                            : std::max<int64_t>(0, e.sharding);
    switch (e.group) {
    case sim::GroupKind::Replicas:
      return cut ? r / cut : 0;
    case sim::GroupKind::Stages:
      return r;
    case sim::GroupKind::ShardPeers:
      return cut ? (r / k / cut) * k + r % k : r % k;
    case sim::GroupKind::ShardGroup:
      return r / k;
    }
    return 0;
  }
  /// The stage device `device` runs; -1 if none.
  int64_t stageOf(int64_t device) const {
    auto it = placement.find(device);
    return it == placement.end() ? -1 : it->second.first;
  }
  /// The compute event, or the collective, of the op at `site` that device
  /// `device` ran; -1 if none.
  int64_t eventOf(int64_t device, int64_t site, bool collective) const {
    auto at = placement.find(device);
    if (at == placement.end())
      return -1;
    auto it =
        events.find({at->second.second, at->second.first, site, collective});
    return it == events.end() ? int64_t(-1) : int64_t(it->second);
  }

private:
  std::map<std::tuple<size_t, int64_t, int64_t, bool>, uint32_t> events;
  std::map<int64_t, std::pair<int64_t, size_t>> placement;
  std::map<int64_t, int64_t> replicaOf;
};

/// A profiling run's trace, read: each rank's timed ops and collectives by
/// site, the driver's steps (those kept: the typical ones), and each rank's
/// every event to find what ran between two.
struct ProfilingTrace {
  struct Timed {
    int64_t device, site;
    double ts, dur; // us
  };
  std::vector<Timed> timed, comm;
  std::vector<std::pair<double, double>> steps, work; // start, end (us)
  std::map<int64_t, std::vector<std::pair<double, double>>> byRank;
  std::set<size_t> kept;

  bool read(llvm::StringRef path, std::string &error);
  /// The step (1-based; 0 before the first) an event at `ts` belongs to.
  size_t stepOf(double ts) const {
    return static_cast<size_t>(std::upper_bound(steps.begin(), steps.end(),
                                                std::make_pair(ts, 1e300)) -
                               steps.begin());
  }
  /// Whether a step's times are kept (every step, when the run traced none).
  bool keeps(size_t step) const { return steps.empty() || kept.count(step); }
  /// When the rank was done with what came before an event starting at
  /// `ts` in `step`: the end of its latest earlier event of the step (an
  /// event that encloses this one, as an op encloses its collective, is
  /// passed over); `ts` if none.
  double readySince(int64_t device, double ts, size_t step) const {
    auto it = byRank.find(device);
    if (it == byRank.end())
      return ts;
    const auto &spans = it->second;
    auto at = std::lower_bound(spans.begin(), spans.end(),
                               std::make_pair(ts, -1e300));
    for (int looked = 0; at != spans.begin() && looked < 8; ++looked) {
      --at;
      if (at->second > ts)
        continue;
      return stepOf(at->second) == step ? at->second : ts;
    }
    return ts;
  }
};

bool ProfilingTrace::read(llvm::StringRef path, std::string &error) {
  std::string text;
  if ((error = rt::readRegularFile(path.str(), "the profiling run's trace",
                                   rt::kMaxTextInput, text))
          .size())
    return false;
  if (!rt::jsonDepthWithin(text, rt::kMaxJsonDepth)) {
    error = path.str() + ": nested more than " +
            std::to_string(rt::kMaxJsonDepth) + " levels deep";
    return false;
  }
  llvm::Expected<llvm::json::Value> trace = llvm::json::parse(text);
  const llvm::json::Array *events =
      trace && trace->getAsObject()
          ? trace->getAsObject()->getArray("traceEvents")
          : nullptr;
  if (!events) {
    error = trace ? "the profiling run's trace holds no events"
                  : llvm::toString(trace.takeError());
    return false;
  }
  for (size_t i = 0; i < events->size(); ++i) {
    const llvm::json::Object *e = (*events)[i].getAsObject();
    auto ts = e ? e->getNumber("ts") : std::nullopt;
    auto dur = e ? e->getNumber("dur") : std::nullopt;
    if (!ts || !dur || e->getString("ph") != "X")
      continue;
    // A span that ends before it starts, or never, is no measurement.
    if (!std::isfinite(*ts) || !std::isfinite(*dur) || *dur < 0 ||
        *dur > 1e12) {
      error = path.str() + ": traceEvents[" + std::to_string(i) +
              "]: \"ts\" and \"dur\" must be finite and \"dur\" from 0 to "
              "1e12 us, not " +
              std::to_string(*ts) + " and " + std::to_string(*dur);
      return false;
    }
    // A step run untraced (`--trace-every`) timed no op: it is no step
    // of the profile.
    if (e->getString("cat") == "untraced")
      continue;
    (e->getString("cat") == "driver" ? steps : work)
        .push_back({*ts, *ts + *dur});
    if (auto pid = e->getInteger("pid"); pid && e->getString("cat") != "driver")
      byRank[*pid].push_back({*ts, *ts + *dur});
    const llvm::json::Object *args = e->getObject("args");
    auto device = e->getInteger("pid");
    if (!args || !device)
      continue;
    if (auto site = args->getInteger("site")) {
      if (e->getString("cat") == "compute")
        timed.push_back({*device, *site, *ts, *dur});
      if (e->getString("cat") == "communication")
        comm.push_back({*device, *site, *ts, *dur});
    }
  }
  std::sort(steps.begin(), steps.end());
  for (auto &[rank, spans] : byRank)
    std::sort(spans.begin(), spans.end());
  kept = typicalSteps(steps);
  return true;
}

/// Each compute event's time in the run: per op and kept step the sum of
/// what the runtime timed for it (an op may make several timed calls) and
/// the gap since the rank's previous event (what the program does between
/// two calls: making and releasing tensors, checking statuses, finding
/// parameters); its mean over the steps at each site, then over its
/// sites; by device class, and by device where the cluster has several.
/// Returns how many (device, event) times it set: 0 when no op matched.
size_t computeTimes(const ProfilingTrace &run, const SiteMap &sites,
                    const sim::EventTable &table,
                    const sim::Topology &topology, sim::ProfileDb &db) {
  std::map<std::tuple<int64_t, int64_t, size_t>, double> perStep;
  for (const ProfilingTrace::Timed &t : run.timed) {
    size_t step = run.stepOf(t.ts);
    if (!run.keeps(step))
      continue;
    double gap = t.ts - run.readySince(t.device, t.ts, step);
    perStep[{t.device, t.site, step}] += (t.dur + gap) * 1e-6;
  }
  std::map<std::pair<std::string, uint32_t>, BySite> samples;
  for (auto &[at, seconds] : perStep) {
    auto [device, site, step] = at;
    int64_t event = sites.eventOf(device, site, /*collective=*/false);
    // An op that talks to its group is timed as a collective, below.
    if (event < 0 || table[event].kind != sim::StepKind::Compute ||
        device >= static_cast<int64_t>(topology.devices.size()))
      continue;
    const perf::DeviceModel &model = topology.devices[device];
    samples[{sim::ProfileDb::deviceKey(model), static_cast<uint32_t>(event)}]
           [{device, site}]
               .push_back(seconds);
    // And the device's own, where the cluster has others: alike devices
    // still differ in a run, and the replay needs the slower one.
    const int64_t n = static_cast<int64_t>(topology.devices.size());
    if (n > 1)
      samples[{sim::ProfileDb::ownKey(topology, device),
               static_cast<uint32_t>(event)}][{device, site}]
          .push_back(seconds);
  }
  for (auto &[key, bySite] : samples)
    db.set(key.first, table[key.second], meanOverSites(bySite));
  return samples.size();
}

/// Each collective's own time in the run, by device class.
void collectiveTimes(const ProfilingTrace &run, const SiteMap &sites,
                     const sim::EventTable &table, const PlannedModel &plan,
                     const sim::Topology &topology, sim::ProfileDb &db) {
  // A collective's own time: from its last member's arrival to the end of
  // its op (the members' waits for each other are the replay's to work
  // out). A member arrives when it is done with the events before: what its
  // op does before it talks to the group (making the result, copying the
  // operand) belongs to the collective, as the replay starts it there; what
  // the op does after (placing what it received) too. The ranks of a stage
  // run one program, so a site names the same collective on each of them.
  std::map<std::tuple<int64_t, int64_t, size_t>, double> opEnd;
  for (const ProfilingTrace::Timed &t : run.timed)
    opEnd[{t.device, t.site, run.stepOf(t.ts)}] = t.ts + t.dur;
  // Each member's arrival counted from its previous meeting (the end of its
  // last collective before, or the step's start): how long it worked since
  // the members were last together.
  std::vector<const ProfilingTrace::Timed *> byDevice;
  for (const ProfilingTrace::Timed &t : run.comm)
    byDevice.push_back(&t);
  std::sort(byDevice.begin(), byDevice.end(),
            [](const ProfilingTrace::Timed *a, const ProfilingTrace::Timed *b) {
              return std::tie(a->device, a->ts) < std::tie(b->device, b->ts);
            });
  struct Instance {
    double arrived = -1e300, end = -1e300;
    int64_t firstDevice = -1;
    std::map<int64_t, double> sinceMeeting; // by device
  };
  // By (stage, site, group, step).
  std::map<std::tuple<int64_t, int64_t, int64_t, size_t>, Instance> instances;
  std::map<std::pair<int64_t, size_t>, std::vector<double>>
      meetings; // by device, step: the ends of its collectives
  for (const ProfilingTrace::Timed *t : byDevice) {
    size_t step = run.stepOf(t->ts);
    int64_t stage = sites.stageOf(t->device);
    int64_t event = sites.eventOf(t->device, t->site, /*collective=*/true);
    if (stage < 0 || event < 0 ||
        table[event].kind != sim::StepKind::Collective || !run.keeps(step))
      continue;
    double arrived = run.readySince(t->device, t->ts, step);
    double end = t->ts + t->dur;
    if (auto op = opEnd.find({t->device, t->site, step}); op != opEnd.end())
      end = std::max(end, op->second);
    // The latest meeting that ended before it arrived (a started sum may
    // still run beside its work).
    std::vector<double> &met = meetings[{t->device, step}];
    double since = run.steps.empty() ? arrived : run.steps[step - 1].first;
    for (double m : met)
      if (m <= arrived)
        since = std::max(since, m);
    met.push_back(end);
    Instance &inst = instances[{stage, t->site,
                                sites.groupOf(t->device, table[event]), step}];
    inst.arrived = std::max(inst.arrived, arrived);
    inst.end = std::max(inst.end, end);
    if (inst.firstDevice < 0)
      inst.firstDevice = t->device;
    inst.sinceMeeting[t->device] = arrived - since;
  }
  // What the members' spread costs beyond what the replay sees. The replay
  // gives each device its mean work between meetings, so the later member
  // arrives at the latest of the means; in a run each member's work varies
  // from step to step, and every meeting waits for whichever is later that
  // time. The mean of those latest arrivals exceeds the latest of the means
  // (more, the more the machine's times vary and the more often the members
  // meet); the difference, measured here per site, is part of the
  // collective's time.
  std::map<std::tuple<int64_t, int64_t, int64_t>, double> spreadCost;
  {
    std::map<std::tuple<int64_t, int64_t, int64_t>,
             std::pair<std::vector<double>, std::map<int64_t, double>>>
        bySite; // latest per step; sum per device
    for (auto &[key, inst] : instances) {
      auto &[latest, sums] =
          bySite[{std::get<0>(key), std::get<1>(key), std::get<2>(key)}];
      double most = 0;
      for (auto [device, since] : inst.sinceMeeting) {
        most = std::max(most, since);
        sums[device] += since;
      }
      latest.push_back(most);
    }
    for (auto &[site, data] : bySite) {
      auto &[latest, sums] = data;
      if (sums.size() < 2)
        continue;
      double meanLatest = 0, latestMean = 0;
      for (double x : latest)
        meanLatest += x / static_cast<double>(latest.size());
      for (auto [device, sum] : sums)
        latestMean =
            std::max(latestMean, sum / static_cast<double>(latest.size()));
      spreadCost[site] = std::max(0.0, meanLatest - latestMean);
    }
  }
  std::map<std::pair<std::string, std::string>, BySite> ownTimes;
  for (auto &[key, inst] : instances) {
    auto [stage, site, group, step] = key;
    int64_t device = inst.firstDevice;
    const sim::Event &e =
        table[sites.eventOf(device, site, /*collective=*/true)];
    int64_t k = std::max<int64_t>(1, e.shards);
    int64_t ranks = e.group == sim::GroupKind::Replicas     ? plan.replicas
                    : e.group == sim::GroupKind::Stages     ? plan.stages
                    : e.group == sim::GroupKind::ShardPeers ? plan.replicas / k
                                                            : k;
    // A sharding group's own collectives (a reduce to owners spans all).
    if (e.sharding > 0 && e.collective != sim::Collective::ReduceScatter)
      ranks = std::min(ranks, e.sharding);
    double spread = 0;
    if (auto it = spreadCost.find({stage, site, group}); it != spreadCost.end())
      spread = it->second;
    ownTimes[{sim::ProfileDb::deviceKey(topology.devices[device]),
              sim::ProfileDb::collectiveKey(e, ranks)}][{stage, site}]
        .push_back((std::max(0.0, inst.end - inst.arrived) + spread) * 1e-6);
  }
  for (auto &[key, bySite] : ownTimes)
    db.set(key.first, key.second, meanOverSites(bySite));
}

/// The driver's share of each kept step: what its span leaves outside the
/// ranks' work.
void driverTime(const ProfilingTrace &run, const PlannedModel &plan,
                sim::ProfileDb &db) {
  std::vector<double> driver;
  for (size_t i = 1; i < run.steps.size(); ++i) {
    if (!run.kept.count(i + 1))
      continue;
    double first = run.steps[i].second, last = run.steps[i].first;
    for (auto [start, end] : run.work)
      if (start >= run.steps[i].first && end <= run.steps[i].second) {
        first = std::min(first, start);
        last = std::max(last, end);
      }
    if (last > first)
      driver.push_back(
          std::max(0.0, (run.steps[i].second - run.steps[i].first) -
                            (last - first)) *
          1e-6);
  }
  if (!driver.empty())
    db.set(kDriverDevice, driverEventKey(plan),
           meanOverSites({{{0, 0}, driver}}));
}

/// The events' times from a profiling run's trace at `path`: each event's
/// mean time there (and each collective's, and the driver's).
bool timesFromTrace(llvm::StringRef path, const PlannedModel &plan,
                    const sim::Topology &topology, const sim::EventTable &table,
                    const std::vector<mlir::ModuleOp> &modules,
                    const std::vector<sim::ProgramSet> &sets,
                    sim::ProfileDb &db, std::string &error) {
  ProfilingTrace run;
  if (!run.read(path, error))
    return false;
  if (run.timed.empty()) {
    error = "the trace '" + path.str() +
            "' names no op's place in its program: profile from a run of "
            "the plan compiled with --trace-sites (whale-exec "
            "--profile-trace)";
    return false;
  }
  SiteMap sites(plan, modules, sets, table);
  if (computeTimes(run, sites, table, topology, db) == 0) {
    error = "the trace '" + path.str() +
            "' times no op of this plan: it is a run of another script, "
            "plan or cluster (profile from a run of this very plan)";
    return false;
  }
  collectiveTimes(run, sites, table, plan, topology, db);
  driverTime(run, plan, db);
  // What the reader would refuse is not written (issue 92 item 15).
  if (std::string err = db.withinLimits(); !err.empty()) {
    error = "the trace '" + path.str() + "': " + err;
    return false;
  }
  return true;
}

/// Trains the plan a few steps with a trace that names each op's place, and
/// times the events from it.
bool timeInContext(Interpreter &interp, const std::string &clusterSpec,
                   const PlannedModel &plan, const sim::Topology &topology,
                   const sim::EventTable &table,
                   const std::vector<mlir::ModuleOp> &modules,
                   const std::vector<sim::ProgramSet> &sets,
                   const ProfileOptions &options, sim::ProfileDb &db,
                   std::string &error) {
  llvm::SmallString<128> path(options.tracePath);
  if (path.empty() &&
      llvm::sys::fs::createTemporaryFile("whale-profile", "json", path)) {
    error = "cannot make a temporary file for the profiling run's trace";
    return false;
  }
  llvm::FileRemover remove(path, options.tracePath.empty());
  TrainOptions train;
  train.cluster = clusterSpec;
  train.evenPlan = options.even;
  train.threads = options.threads;
  train.steps = options.contextSteps * options.traceEvery;
  train.tracePath = path.str().str();
  train.traceSites = true;
  train.traceEvery = options.traceEvery;
  TrainResult result = whale::train(interp, train);
  if (!result.ok) {
    error = "the profiling run failed: " + result.error;
    return false;
  }
  return timesFromTrace(path, plan, topology, table, modules, sets, db, error);
}

} // namespace

bool profilePlan(Interpreter &interp, const std::string &clusterSpec,
                 const PlannedModel &plan, const Cluster &cluster,
                 const ProfileOptions &options, sim::ProfileDb &db,
                 std::string &error) {
  // The distinct events of every shape of rank, and an op of each.
  sim::EventTable table;
  std::vector<mlir::Operation *> firstOps;
  std::vector<mlir::ModuleOp> modules = {plan.ranks.get()};
  for (const RankVariant &v : plan.others)
    modules.push_back(v.ranks.get());
  std::vector<sim::ProgramSet> sets(modules.size());
  for (size_t i = 0; i < modules.size(); ++i)
    if (!sim::extractPrograms(modules[i], plan.model, plan.stages, table,
                              sets[i], error, &firstOps))
      return false;
  firstOps.resize(table.size(), nullptr);
  if (!options.fromTrace.empty()) {
    // A run made elsewhere: its trace is all there is to time.
    if (!timesFromTrace(options.fromTrace, plan,
                        topologyOf(cluster, options.defaultThreads), table,
                        modules, sets, db, error))
      return false;
    db.machine = "the machine of " + options.fromTrace;
    db.commit = WHALE_COMMIT;
    db.created = nowUtc();
    return true;
  }
  // One program of probes per context the events were read in.
  struct Probes {
    mlir::OwningOpRef<mlir::ModuleOp> module;
    std::unique_ptr<JitProgram> jit;
  };
  std::vector<Probes> probes;
  for (mlir::ModuleOp m : modules) {
    if (llvm::any_of(probes, [&](const Probes &p) {
          return p.module.get()->getContext() == m.getContext();
        }))
      continue;
    Probes p{probeModule(m.getContext(), firstOps), nullptr};
    p.jit = JitProgram::compile(*p.module, error);
    if (!p.jit) {
      error = "compiling the events to profile failed: " + error;
      return false;
    }
    probes.push_back(std::move(p));
  }
  bool bf16 = false;
  if (auto fn = plan.planned.get().lookupSymbol<mlir::func::FuncOp>(plan.model))
    bf16 = ampBf16(fn);

  // One context per class of device: its first device stands for all. The
  // CPU devices of its node run beside it, as they do in a planned run of
  // one process (they share the cores' caches and the memory bus), so each
  // event runs on all of them at once and the first one's time is kept.
  sim::Topology topology = topologyOf(cluster, options.defaultThreads);
  std::map<std::string, size_t> classes;
  for (size_t d = 0; d < topology.devices.size(); ++d)
    classes.try_emplace(sim::ProfileDb::deviceKey(topology.devices[d]), d);
  size_t total = 0, done = 0;
  for (Probes &p : probes)
    for (auto fn : p.module->getOps<mlir::func::FuncOp>()) {
      (void)fn;
      ++total;
    }
  total *= classes.size();
  for (auto &[key, first] : classes) {
    std::vector<size_t> beside = {first};
    if (!topology.devices[first].gpu)
      for (size_t d = 0; d < topology.devices.size(); ++d)
        if (d != first && !topology.devices[d].gpu &&
            topology.node[d] == topology.node[first])
          beside.push_back(d);
    std::vector<ContextPtr> contexts;
    std::vector<int> threads;
    for (size_t d : beside) {
      std::string name = runtimeDeviceName(cluster.devices[d], d);
      whale_rt_context *opened = nullptr;
      char why[640] = "";
      if (whale_rt_context_open(name.c_str(), topology.devices[d].parallelUnits,
                                0, 1, &opened, why,
                                sizeof why) != WHALE_RT_OK) {
        error = "cannot open " + name + ": " + why;
        return false;
      }
      contexts.emplace_back(opened, whale_rt_context_destroy);
      threads.push_back(topology.devices[d].gpu
                            ? 0
                            : std::max(1, topology.devices[d].parallelUnits));
      // Ops time as a training step runs them (dropout draws, batch
      // normalization takes the batch's statistics).
      whale_rt_set_rows(opened, 0, 1);
      if (bf16)
        whale_rt_set_amp(opened, WHALE_RT_AMP_BF16);
    }
    // The devices' threads where a planned run puts them: cores of their
    // own in device order. The run binds the devices of its whole
    // cluster; a node's alone are those of a one-node cluster.
    std::vector<whale_rt_context *> opened;
    for (const ContextPtr &c : contexts)
      opened.push_back(c.get());
    std::vector<int64_t> devices(beside.begin(), beside.end());
    std::vector<int> cpuOf =
        bindContexts(opened, devices, threads, whale_rt_launched_by_mpi() != 0);
    const bool bound = llvm::any_of(cpuOf, [](int c) { return c >= 0; });
    for (Probes &p : probes)
      for (auto fn : p.module->getOps<mlir::func::FuncOp>()) {
        size_t event = std::stoul(fn.getName().drop_front(5).str());
        JitProgram::Entry entry = p.jit->lookup(fn.getName().str());
        std::vector<double> seconds(contexts.size(), -1);
        std::vector<int64_t> runs(contexts.size(), 0);
        std::vector<std::string> errors(contexts.size());
        auto measure = [&](size_t i) {
          if (cpuOf[i] >= 0)
            rt::pinThisThread(cpuOf[i]);
          whale_rt_context *ctx = contexts[i].get();
          std::vector<whale_rt_tensor *> inputs;
          if (makeInputs(ctx, fn, inputs, errors[i]))
            seconds[i] =
                timeEntry(entry, ctx, inputs, options, runs[i], errors[i]);
          for (whale_rt_tensor *t : inputs)
            whale_rt_tensor_release(ctx, t);
        };
        // Bound, every device's on a thread of its own: this one is the
        // caller's, which stays where it was.
        std::vector<std::thread> others;
        for (size_t i = bound ? 0 : 1; i < contexts.size(); ++i)
          others.emplace_back(measure, i);
        if (!bound)
          measure(0);
        for (std::thread &t : others)
          t.join();
        if (seconds[0] < 0) {
          error = "profiling '" + table[event].key() + "' on " +
                  runtimeDeviceName(cluster.devices[first], first) +
                  " failed: " + errors[0];
          return false;
        }
        db.set(key, table[event], {seconds[0], runs[0]});
        if (options.progress)
          options.progress(++done, total);
      }
  }
  if (options.contextSteps > 0 &&
      !timeInContext(interp, clusterSpec, plan, topology, table, modules, sets,
                     options, db, error))
    return false;
  db.machine = machineName();
  db.commit = WHALE_COMMIT;
  db.created = nowUtc();
  return true;
}

} // namespace whale
