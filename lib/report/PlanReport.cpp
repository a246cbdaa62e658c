//===- PlanReport.cpp - what `whale plan` shows ---------------------------===//

#include "lib/report/PlanReport.h"

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/Passes.h"
#include "lowering/Plan.h"
#include "lowering/Transforms/Parallel/StageMemory.h"
#include "perfmodel/DeviceSpeed.h"
#include "runtime/run/BatchRows.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <numeric>

namespace whale {
namespace {

struct StageReport {
  int64_t stage = 0;
  std::vector<std::string> strategies;
  std::vector<int64_t> devices;
  std::vector<std::string> schedule;
  /// The parameters a device keeps (under shard_parameters the most any
  /// rank of the stage owns, beside those nobody owns), and the most of
  /// them gathered from their owners alive at once.
  int64_t parameterBytes = 0, gatheredBytes = 0, activationBytes = 0;
  /// The most intermediate tensors alive at once, gathered parameters and
  /// gradients included: with the parameters and the optimizer state, the
  /// device's predicted peak (the kinds' figures overlap: the gradients are
  /// intermediates too while the backward makes them).
  int64_t liveBytes = 0;
  /// What the parameters carry on a device: the gradients (with the next
  /// micro-batch's beside their sum when they accumulate) and the
  /// optimizer's state, on its owner alone under shard_optimizer (the most
  /// any rank of the stage owns).
  int64_t gradientBytes = 0, optimizerStateBytes = 0;
  int64_t sendBytes = 0, recvBytes = 0, allReduceBytes = 0;
  int64_t buckets = 0;
  /// ZeRO's buckets: the gradients reduced to their owners (counted in
  /// buckets, not in allReduceBytes) and the parameters gathered from
  /// them.
  int64_t reducedToOwnersBytes = 0, gatheredFromOwnersBytes = 0;
  /// Under shard_parameters: "step" where each layer is gathered once a
  /// step and kept, "micro_batch" where before each micro-batch's forward
  /// and backward (-whale-shard-parameters' choice); "" otherwise.
  std::string gatherEvery;
  int64_t gatherLayers = 1; ///< layers a gathered unit (the plan's choice)
  /// Bytes of the shard groups' collectives (forward and backward), and
  /// of those the all-to-alls'.
  int64_t tensorParallelBytes = 0, allToAllBytes = 0;
  /// Bytes of the batch normalizations' statistics, summed over the
  /// replicas: f64 channel sums (and a count) for the mean, for the
  /// centred squares, and for the gradient's two sums (and a count).
  int64_t statisticsBytes = 0;
  int64_t shards = 1;
  struct Split {
    std::string strategy;
    std::vector<std::pair<std::string, std::string>> params; ///< name, layout
    mlir::ArrayAttr patterns, bridges;
  };
  std::vector<Split> splits;
};

/// The most bytes of intermediate tensors alive at once in a rank program,
/// each held from its op to its last reader (as the lowering releases them).
/// Parameters, optimizer state and inputs are not counted; results that
/// are their operands' buffers (all-reduce, clipping) take them over, and a
/// started all-reduce holds its tensors until its wait's results do.
/// Parameters gathered from their owners (shard_parameters) are counted
/// apart: the most of the other intermediates, the most gathered, and the
/// most of both at once (what the device holds at its peak besides its own
/// parameters and optimizer state), in one walk. A bucket reduced to owners
/// while the backward goes on leaves each rank only its own part's sums
/// (the rest is freed once packed): what an owner keeps is counted for its
/// position in the group, and a device's figure is its position's (the
/// ranks of a group run one program, each at one position).
struct Peaks {
  int64_t activations = 0, gathered = 0, both = 0;
};
Peaks peaksOf(mlir::func::FuncOp fn) {
  llvm::DenseMap<mlir::Value, mlir::Operation *> lastUse;
  fn.walk([&](mlir::Operation *op) {
    for (mlir::Value v : op->getOperands())
      lastUse[v] = op;
  });
  // live[1]: gathered parameters' bytes; live[0]: the rest but what
  // owners keep, which ownedLive counts by their position.
  int64_t live[2] = {0, 0};
  std::map<int64_t, int64_t> ownedLive;
  Peaks peaks;
  llvm::DenseMap<mlir::Value, int64_t> held;
  llvm::DenseMap<mlir::Value, int64_t> ownerOf; // kept by one position
  llvm::DenseSet<mlir::Value> gathered;
  auto release = [&](mlir::Value v) {
    if (auto o = ownerOf.find(v); o != ownerOf.end()) {
      ownedLive[o->second] -= held[v];
      ownerOf.erase(o);
    } else {
      live[gathered.contains(v)] -= held[v];
    }
    held.erase(v);
  };
  // Each started all-reduce's tensors' bytes and (a reduce to owners) their
  // owners, in its operands' order.
  llvm::DenseMap<mlir::Value, llvm::SmallVector<std::pair<int64_t, int64_t>>>
      started;
  auto takeOver = [&](mlir::ValueRange from, mlir::ValueRange to) {
    for (auto [f, t] : llvm::zip(from, to)) {
      auto it = held.find(f);
      if (it == held.end())
        continue;
      held[t] = it->second;
      held.erase(f);
      if (auto o = ownerOf.find(f); o != ownerOf.end()) {
        ownerOf[t] = o->second;
        ownerOf.erase(f);
      }
    }
  };
  for (mlir::Operation &op : fn.getBody().front()) {
    if (auto ar = mlir::dyn_cast<AllReduceOp>(op))
      takeOver(ar.getValues(), ar.getResults());
    else if (auto clip = mlir::dyn_cast<ClipGradNormOp>(op))
      takeOver(clip.getGrads(), clip.getResults());
    else if (auto into = mlir::dyn_cast<AddIntoOwnersOp>(op))
      takeOver(into.getSums(), into.getResults());
    else if (auto start = mlir::dyn_cast<AllReduceStartOp>(op)) {
      // A reduce to owners frees what a rank sends for other owners once
      // packed: each owner keeps its own.
      std::optional<llvm::ArrayRef<int64_t>> owners = start.getOwners();
      for (auto [i, v] : llvm::enumerate(start.getValues())) {
        auto it = held.find(v);
        const int64_t bytes = it == held.end() ? 0 : it->second;
        const int64_t owner = owners ? (*owners)[i] : -1;
        if (owner >= 0 && it != held.end()) {
          if (auto o = ownerOf.find(v); o != ownerOf.end()) {
            ownedLive[o->second] -= bytes;
            ownerOf.erase(o);
          } else {
            live[0] -= bytes;
          }
          ownedLive[owner] += bytes;
        }
        started[start.getPending()].push_back({bytes, owner});
        if (it != held.end())
          held.erase(it);
      }
    } else if (auto wait = mlir::dyn_cast<AllReduceWaitOp>(op))
      for (auto [r, kept] :
           llvm::zip(wait.getResults(), started[wait.getPending()]))
        if (kept.first) {
          held[r] = kept.first;
          if (kept.second >= 0)
            ownerOf[r] = kept.second;
        }
    if (!mlir::isa<ParamOp, AllReduceOp, ClipGradNormOp, AllReduceStartOp,
                   AllReduceWaitOp, AddIntoOwnersOp>(op)) {
      const bool gather = mlir::isa<GatherParamsOp, GatherParamsWaitOp>(op);
      for (mlir::Value r : op.getResults()) {
        int64_t bytes = tensorBytes(r.getType());
        held[r] = bytes;
        live[gather] += bytes;
        if (gather)
          gathered.insert(r);
      }
    }
    int64_t owned = 0; // the position keeping the most
    for (const auto &[position, bytes] : ownedLive)
      owned = std::max(owned, bytes);
    peaks.activations = std::max(peaks.activations, live[0] + owned);
    peaks.gathered = std::max(peaks.gathered, live[1]);
    peaks.both = std::max(peaks.both, live[0] + owned + live[1]);
    for (mlir::Value v : op.getOperands())
      if (lastUse.lookup(v) == &op && held.count(v))
        release(v);
    for (mlir::Value r : op.getResults())
      if (!lastUse.count(r) && held.count(r))
        release(r);
  }
  return peaks;
}

std::vector<StageReport> reports(const PlannedModel &plan) {
  std::vector<StageReport> out(plan.stages);
  auto model = plan.planned.get().lookupSymbol<mlir::func::FuncOp>(plan.model);
  for (TaskGraphOp tg : plan::taskGraphs(model)) {
    // The planning passes checked each stage (plan::checkedStage).
    const int64_t s = plan::stageOf(tg);
    if (s < 0 || s >= int64_t(out.size()))
      continue;
    StageReport &r = out[s];
    r.strategies.push_back(
        stringifyStrategy(tg.getStrategy()).str() +
        (tg.getDevices() ? "(" + std::to_string(*tg.getDevices()) + ")" : ""));
    if (r.devices.empty())
      for (int64_t d :
           tg->getAttrOfType<mlir::DenseI64ArrayAttr>("virtual_device")
               .asArrayRef())
        r.devices.push_back(d);
    if (r.schedule.empty())
      if (auto order = tg->getAttrOfType<ScheduleAttr>("schedule"))
        for (const ScheduleStep &step : order.getSteps())
          r.schedule.push_back(step.str());
    auto shards = tg->getAttrOfType<mlir::IntegerAttr>("shards");
    if (!shards)
      continue;
    r.shards = shards.getInt();
    StageReport::Split split{r.strategies.back(),
                             {},
                             tg->getAttrOfType<mlir::ArrayAttr>("sharding"),
                             tg->getAttrOfType<mlir::ArrayAttr>("bridges")};
    for (ParamOp p : tg.getBody().front().getOps<ParamOp>()) {
      std::string layout = "whole";
      if (std::optional<llvm::ArrayRef<int64_t>> sh = p.getShard())
        layout = "part(" + std::to_string((*sh)[0]) + ")";
      split.params.push_back({p.getName().str(), layout});
    }
    r.splits.push_back(std::move(split));
  }
  // A program that calls its steps is counted as the runtime runs it,
  // with the calls inlined: what each sends and holds at once.
  mlir::ModuleOp ranks = plan.ranks.get();
  mlir::OwningOpRef<mlir::ModuleOp> inlined;
  if (ranks
          .walk(
              [](mlir::func::CallOp) { return mlir::WalkResult::interrupt(); })
          .wasInterrupted()) {
    inlined = ranks.clone();
    // The planner's own rank programs: their steps call nothing.
    (void)inlineStepCalls(*inlined);
    ranks = *inlined;
  }
  for (int64_t s = 0; s < plan.stages; ++s) {
    StageReport &r = out[s];
    r.stage = s;
    auto fn = ranks.lookupSymbol<mlir::func::FuncOp>(plan.model + "_stage" +
                                                     std::to_string(s));
    // Optimizer state and parameters by owner (-1: every rank keeps it).
    std::map<int64_t, int64_t> stateByOwner, paramsByOwner;
    // Under shard_gradients with micro-batches each is reduced to the
    // owners, which alone keep the running sums: one micro-batch's
    // gradients, and the sums a rank owns (the most any owns).
    const bool reducedEach =
        settingsOf(fn).getShardGradients() && plan.microBatches > 1;
    std::map<int64_t, int64_t> sumsByOwner;
    auto addState = [&](mlir::Value param, int64_t tensors,
                        std::optional<uint64_t> owner) {
      stateByOwner[owner ? int64_t(*owner) : -1] +=
          tensors * tensorBytes(param.getType());
      sumsByOwner[owner ? int64_t(*owner) : -1] += tensorBytes(param.getType());
    };
    fn.walk([&](mlir::Operation *op) {
      if (auto p = mlir::dyn_cast<ParamOp>(op)) {
        paramsByOwner[p.getOwner() ? int64_t(*p.getOwner()) : -1] +=
            tensorBytes(p.getType());
        if (!p.getFrozen())
          r.gradientBytes += static_cast<int64_t>(
              plan::gradientBytesOf(double(tensorBytes(p.getType())),
                                    reducedEach ? 1 : plan.microBatches));
      } else if (auto sgd = mlir::dyn_cast<SgdUpdateOp>(op))
        addState(sgd.getParam(), sgd.getMomentum().convertToDouble() > 0,
                 sgd.getOwner());
      else if (auto adam = mlir::dyn_cast<AdamUpdateOp>(op))
        addState(adam.getParam(), 2, adam.getOwner());
      else if (auto send = mlir::dyn_cast<SendOp>(op))
        r.sendBytes += tensorBytes(send.getValue().getType());
      else if (auto recv = mlir::dyn_cast<RecvOp>(op))
        r.recvBytes += tensorBytes(recv.getType());
      else if (auto bn = mlir::dyn_cast<BatchNormOp>(op)) {
        if (plan.replicas > 1)
          r.statisticsBytes +=
              8 * (2 * bn.getGamma().getType().getNumElements() + 1);
      } else if (auto bn = mlir::dyn_cast<BatchNormGradOp>(op)) {
        if (plan.replicas > 1)
          r.statisticsBytes +=
              8 * (2 * bn.getGamma().getType().getNumElements() + 1);
      } else if (mlir::isa<AllReduceOp, AllReduceStartOp>(op)) {
        ++r.buckets;
        int64_t &bytes = op->hasAttr("owners") ? r.reducedToOwnersBytes
                                               : r.allReduceBytes;
        for (mlir::Value v : op->getOperands())
          bytes += tensorBytes(v.getType());
      } else if (auto g = mlir::dyn_cast<GatherParamsOp>(op)) {
        r.gatheredFromOwnersBytes += g.bucketBytes();
      } else if (auto g = mlir::dyn_cast<GatherParamsStartOp>(op)) {
        r.gatheredFromOwnersBytes += g.bucketBytes();
      } else if (mlir::isa<BroadcastOp>(op)) {
        for (mlir::Value v : op->getOperands())
          r.gatheredFromOwnersBytes += tensorBytes(v.getType());
      } else if (auto cost = mlir::dyn_cast<CostOpInterface>(op)) {
        r.tensorParallelBytes += cost.getCommBytes();
        if (mlir::isa<AllToAllOp>(op))
          r.allToAllBytes += cost.getCommBytes();
      }
    });
    if (auto every = fn->getAttrOfType<mlir::StringAttr>("whale.gather_every"))
      r.gatherEvery = every.getValue().str();
    if (auto k = fn->getAttrOfType<mlir::IntegerAttr>("whale.gather_layers"))
      r.gatherLayers = k.getInt();
    const Peaks peaks = peaksOf(fn);
    r.activationBytes = peaks.activations;
    r.gatheredBytes = peaks.gathered;
    r.liveBytes = peaks.both;
    auto mostOwned = [](std::map<int64_t, int64_t> &byOwner) {
      int64_t owned = 0;
      for (const auto &[owner, bytes] : byOwner)
        if (owner >= 0)
          owned = std::max(owned, bytes);
      return byOwner[-1] + owned;
    };
    r.optimizerStateBytes = mostOwned(stateByOwner);
    // The running sums: those nobody owns whole (added up on every rank),
    // and the most a rank owns.
    if (reducedEach)
      r.gradientBytes += mostOwned(sumsByOwner);
    r.parameterBytes = mostOwned(paramsByOwner);
  }
  return out;
}

llvm::ArrayRef<mlir::Attribute> listOf(mlir::ArrayAttr a) {
  return a ? a.getValue() : llvm::ArrayRef<mlir::Attribute>();
}

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / 1048576.0);
  return buf;
}

/// What one device does under a plan, as the balance pass predicts.
struct DeviceReport {
  int64_t device = 0, stage = 0, replica = 0, samples = 0, memory = 0;
  double flops = 0, seconds = 0;
};

std::vector<DeviceReport> deviceReports(const PlannedModel &plan) {
  std::vector<DeviceReport> out(plan.devices);
  const std::vector<int64_t> replicaRows = plan.replicaRows();
  for (int64_t i = 0; i < static_cast<int64_t>(plan.grid.size()); ++i) {
    DeviceReport &d = out[plan.grid[i]];
    d.device = plan.grid[i];
    d.stage = i / plan.replicas;
    d.replica = i % plan.replicas;
    d.samples = replicaRows[d.replica];
  }
  for (DeviceReport &d : out) {
    if (d.device < static_cast<int64_t>(plan.deviceMemory.size()))
      d.memory = plan.deviceMemory[d.device];
    if (d.device < static_cast<int64_t>(plan.deviceSeconds.size()))
      d.seconds = plan.deviceSeconds[d.device];
    if (d.device < static_cast<int64_t>(plan.deviceFlops.size()))
      d.flops = plan.deviceFlops[d.device];
  }
  return out;
}

/// The slowest device's predicted compute time: the step waits for it.
double stepSeconds(const PlannedModel &plan) {
  double worst = 0;
  for (double t : plan.deviceSeconds)
    worst = std::max(worst, t);
  return worst;
}

/// Says which rates are nominal, and how to measure them: a balance by
/// nominal rates is a guess (a CPU's 8 threads need not be twice 4).
void nominalRatesText(llvm::raw_ostream &os, const PlannedModel &plan) {
  if (plan.nominalRates.empty())
    return;
  const bool all =
      plan.nominalRates.size() == static_cast<size_t>(plan.devices);
  const bool one = plan.nominalRates.size() == 1;
  os << "  "
     << (all   ? "rates of every device are"
         : one ? "the rate of device"
               : "rates of devices");
  if (!all)
    for (size_t i = 0; i < plan.nominalRates.size(); ++i)
      os << (i ? ", " : " ") << plan.nominalRates[i];
  if (!all)
    os << (one ? " is" : " are");
  os << llvm::formatv(" nominal, not measured ({0:F0} GFLOP/s a CPU "
                      "thread, {1:F0} TFLOP/s a GPU): `whale devices --cluster "
                      "SPEC --probe -o FILE.json` measures them, and "
                      "--cluster FILE.json plans by them\n",
                      perf::kNominalCoreFlops / 1e9,
                      perf::kNominalGpuFlops / 1e12);
}

void devicesText(llvm::raw_ostream &os, const PlannedModel &plan,
                 const PlannedModel *even, const std::string &evenError) {
  os << "devices ("
     << (plan.balance == "hardware" ? "balanced by speed and "
                                      "memory"
                                    : plan.balance)
     << "):\n";
  os << llvm::formatv("  {0,-6} {1,-5} {2,12} {3,8} {4,11} {5,12}", "device",
                      "stage", "GFLOP/s", "samples", "compute ms",
                      "memory MiB");
  std::vector<DeviceReport> others;
  if (even) {
    others = deviceReports(*even);
    os << llvm::formatv("   | even: {0,8} {1,11} {2,12}", "samples",
                        "compute ms", "memory MiB");
  }
  os << "\n";
  for (const DeviceReport &d : deviceReports(plan)) {
    os << llvm::formatv("  {0,-6} {1,-5} {2,12:F1} {3,8} {4,11:F3} {5,12:F2}",
                        d.device, d.stage, d.flops / 1e9, d.samples,
                        d.seconds * 1e3, d.memory / 1048576.0);
    if (even) {
      const DeviceReport &e = others[d.device];
      os << llvm::formatv("   |       {0,8} {1,11:F3} {2,12:F2}", e.samples,
                          e.seconds * 1e3, e.memory / 1048576.0);
    }
    os << "\n";
  }
  double mine = stepSeconds(plan);
  os << llvm::formatv(
      "  predicted compute per step (slowest device): {0:F3} ms", mine * 1e3);
  if (even && stepSeconds(*even) > 0 && mine > 0)
    os << llvm::formatv("; even {0:F3} ms, {1:F2}x", stepSeconds(*even) * 1e3,
                        stepSeconds(*even) / mine);
  else if (!evenError.empty())
    os << "; no even plan: " << evenError;
  os << "\n";
  nominalRatesText(os, plan);
}

llvm::json::Object devicesJson(const PlannedModel &plan) {
  llvm::json::Array rows;
  for (const DeviceReport &d : deviceReports(plan))
    rows.push_back(llvm::json::Object{{"device", d.device},
                                      {"stage", d.stage},
                                      {"replica", d.replica},
                                      {"flops", d.flops},
                                      {"samples", d.samples},
                                      {"compute_seconds", d.seconds},
                                      {"memory_bytes", d.memory}});
  llvm::json::Array nominal;
  for (int64_t d : plan.nominalRates)
    nominal.push_back(d);
  return llvm::json::Object{{"balance", plan.balance},
                            {"step_compute_seconds", stepSeconds(plan)},
                            {"nominal_rates", std::move(nominal)},
                            {"devices", std::move(rows)}};
}

} // namespace

std::string planText(const PlannedModel &plan, const PlannedModel *even,
                     const std::string &evenError) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "model " << plan.model << " on " << plan.devices << " device"
     << (plan.devices == 1 ? "" : "s") << ": " << plan.stages << " stage"
     << (plan.stages == 1 ? "" : "s") << " x " << plan.replicas << " replica"
     << (plan.replicas == 1 ? "" : "s") << "; global batch " << plan.globalBatch
     << " = ";
  const std::vector<int64_t> rows =
      dataReplicaRows(plan.replicaRows(), plan.rowGroup);
  bool equal = llvm::all_equal(rows);
  if (equal)
    os << rows.size() << " x " << plan.microBatches << " micro-batch"
       << (plan.microBatches == 1 ? "" : "es") << " of " << plan.microBatch;
  else {
    os << "local batches ";
    llvm::interleave(rows, os, " + ");
    os << " in " << plan.microBatches << " micro-batch"
       << (plan.microBatches == 1 ? "" : "es") << " each";
  }
  os << ", schedule " << plan.schedule;
  if (plan.chunks > 1)
    os << " interleaved over " << plan.chunks << " chunks a stage";
  if (plan.rowGroup > 1)
    os << "; each shard group of " << plan.rowGroup << " shares its rows";
  os << "\n";
  for (const StageReport &r : reports(plan)) {
    os << "stage " << r.stage << ": ";
    llvm::interleaveComma(r.strategies, os);
    os << " on devices [";
    llvm::interleaveComma(r.devices, os);
    os << "]\n  schedule   ";
    llvm::interleave(r.schedule, os, " ");
    os << "\n  memory     parameters " << mib(r.parameterBytes);
    if (r.gatheredBytes > 0)
      os << ", gathered parameters " << mib(r.gatheredBytes) << " ("
         << r.gatherLayers << (r.gatherLayers == 1 ? " layer" : " layers")
         << " a unit, "
         << (r.gatherEvery == "step"
                 ? "each gathered once a step)"
                 : "each gathered per micro-batch, forward and backward)");
    os << ", gradients " << mib(r.gradientBytes) << ", optimizer state "
       << mib(r.optimizerStateBytes) << ", peak activations "
       << mib(r.activationBytes) << " per device\n  per step   all-reduce "
       << mib(r.allReduceBytes) << " in " << r.buckets << " bucket"
       << (r.buckets == 1 ? "" : "s") << ", send " << mib(r.sendBytes)
       << ", recv " << mib(r.recvBytes) << ", shard groups "
       << mib(r.tensorParallelBytes);
    if (r.reducedToOwnersBytes > 0 || r.gatheredFromOwnersBytes > 0)
      os << ", reduced to owners " << mib(r.reducedToOwnersBytes)
         << ", gathered from owners " << mib(r.gatheredFromOwnersBytes);
    if (r.allToAllBytes > 0)
      os << " (all-to-all " << mib(r.allToAllBytes) << ")";
    if (r.statisticsBytes > 0)
      os << ", batch-norm statistics " << r.statisticsBytes << " bytes";
    os << " per device\n";
    for (const StageReport::Split &sp : r.splits) {
      os << "  " << sp.strategy << " over shard groups of " << r.shards;
      if (!plan.shardWeights.empty()) {
        os << ", uneven shards ";
        llvm::interleave(plan.shardWeights, os, ":");
        os << " (each split dimension in "
           << std::accumulate(plan.shardWeights.begin(),
                              plan.shardWeights.end(), int64_t(0))
           << " units)";
      }
      os << "\n    parameters ";
      llvm::interleaveComma(sp.params, os, [&](const auto &p) {
        os << p.first << " " << p.second;
      });
      os << "\n";
      for (mlir::Attribute a : listOf(sp.patterns)) {
        auto d = mlir::cast<mlir::DictionaryAttr>(a);
        os << "    " << d.getAs<mlir::StringAttr>("op").getValue() << ": "
           << d.getAs<mlir::StringAttr>("pattern").getValue() << " -> "
           << d.getAs<mlir::StringAttr>("result").getValue() << " (bytes:";
        for (mlir::NamedAttribute c : d.getAs<mlir::DictionaryAttr>("costs"))
          os << " " << c.getName().getValue() << " "
             << mlir::cast<mlir::IntegerAttr>(c.getValue()).getInt();
        os << ")\n";
      }
      for (mlir::Attribute a : listOf(sp.bridges))
        os << "    bridge " << mlir::cast<mlir::StringAttr>(a).getValue()
           << "\n";
    }
  }
  devicesText(os, plan, even, evenError);
  return s;
}

std::string planJson(const PlannedModel &plan, const PlannedModel *even,
                     const std::string &evenError) {
  llvm::json::Array stages;
  for (const StageReport &r : reports(plan)) {
    llvm::json::Array strategies, devices, schedule;
    for (const std::string &x : r.strategies)
      strategies.push_back(x);
    for (int64_t d : r.devices)
      devices.push_back(d);
    for (const std::string &x : r.schedule)
      schedule.push_back(x);
    llvm::json::Array splits;
    for (const StageReport::Split &sp : r.splits) {
      llvm::json::Array params, patterns, bridges;
      for (const auto &p : sp.params)
        params.push_back(
            llvm::json::Object{{"name", p.first}, {"layout", p.second}});
      for (mlir::Attribute a : listOf(sp.patterns)) {
        auto d = mlir::cast<mlir::DictionaryAttr>(a);
        llvm::json::Object costs;
        for (mlir::NamedAttribute c : d.getAs<mlir::DictionaryAttr>("costs"))
          costs[c.getName().getValue()] =
              mlir::cast<mlir::IntegerAttr>(c.getValue()).getInt();
        patterns.push_back(llvm::json::Object{
            {"op", d.getAs<mlir::StringAttr>("op").str()},
            {"pattern", d.getAs<mlir::StringAttr>("pattern").str()},
            {"result", d.getAs<mlir::StringAttr>("result").str()},
            {"cost_bytes", std::move(costs)}});
      }
      for (mlir::Attribute a : listOf(sp.bridges))
        bridges.push_back(mlir::cast<mlir::StringAttr>(a).str());
      splits.push_back(llvm::json::Object{{"taskgraph", sp.strategy},
                                          {"shards", r.shards},
                                          {"parameters", std::move(params)},
                                          {"patterns", std::move(patterns)},
                                          {"bridges", std::move(bridges)}});
    }
    stages.push_back(llvm::json::Object{
        {"stage", r.stage},
        {"taskgraphs", std::move(strategies)},
        {"devices", std::move(devices)},
        {"schedule", std::move(schedule)},
        {"memory_bytes",
         llvm::json::Object{
             {"parameters", r.parameterBytes},
             {"gathered_parameters", r.gatheredBytes},
             {"gather_every", r.gatherEvery},
             {"gather_layers", r.gatherLayers},
             {"gradients", r.gradientBytes},
             {"optimizer_state", r.optimizerStateBytes},
             {"peak_activations", r.activationBytes},
             {"peak", r.parameterBytes + r.optimizerStateBytes + r.liveBytes}}},
        {"comm_bytes_per_step",
         llvm::json::Object{{"all_reduce", r.allReduceBytes},
                            {"all_reduce_buckets", r.buckets},
                            {"reduce_to_owners", r.reducedToOwnersBytes},
                            {"gather_from_owners", r.gatheredFromOwnersBytes},
                            {"send", r.sendBytes},
                            {"recv", r.recvBytes},
                            {"shard_groups", r.tensorParallelBytes},
                            {"all_to_all", r.allToAllBytes},
                            {"statistics", r.statisticsBytes}}},
        {"split_taskgraphs", std::move(splits)}});
  }
  llvm::json::Array grid;
  for (int64_t d : plan.grid)
    grid.push_back(d);
  llvm::json::Object root{{"version", 1},
                          {"model", plan.model},
                          {"devices", plan.devices},
                          {"stages", plan.stages},
                          {"replicas", plan.replicas},
                          {"grid", std::move(grid)},
                          {"global_batch", plan.globalBatch},
                          {"micro_batches", plan.microBatches},
                          {"micro_batch", plan.microBatch},
                          {"schedule", plan.schedule},
                          {"chunks", plan.chunks},
                          {"taskgraph_stages", std::move(stages)}};
  llvm::json::Array local;
  for (int64_t b : plan.localBatches)
    local.push_back(b);
  root["local_batches"] = std::move(local);
  if (plan.rowGroup > 1)
    root["row_group"] = plan.rowGroup;
  if (!plan.shardWeights.empty()) {
    llvm::json::Array weights;
    for (int64_t w : plan.shardWeights)
      weights.push_back(w);
    root["shard_weights"] = std::move(weights);
  }
  root["balance"] = devicesJson(plan);
  if (even)
    root["even"] = devicesJson(*even);
  else if (!evenError.empty())
    root["even_error"] = evenError;
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return s;
}

} // namespace whale
