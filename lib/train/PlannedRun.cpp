//===- PlannedRun.cpp - a plan's ranks, opened, stepped and reported ------===//
//
// The driver fills the global batch from the data order, hands each replica
// its rows, and adds the ranks' shares of the loss. When a rank fails, the
// communicator is aborted so the others stop waiting, and the failing
// rank's own message is reported (or the run recovers, Recovery.cpp).
//
//===----------------------------------------------------------------------===//

#include "lib/train/PlannedRun.h"
#include "lib/train/HostData.h"

#include "dialects/Whale/IR/TrainAttrs.h"
#include "lib/compile/DataSpec.h"
#include "lib/compile/LrSchedule.h"
#include "lib/compile/ModelLookup.h"
#include "lib/train/LoopSetup.h"
#include "lowering/Plan.h"
#include "runtime/WhaleRuntime.h"
#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/checkpoint/RankCheckpoint.h"
#include "runtime/run/BatchRows.h"
#include "runtime/run/Interrupt.h"

#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <functional>

namespace whale {
namespace {

/// Every byte a rank's collectives and sends moved (recvs are the senders').
int64_t bytesMoved(const whale_rt_context *ctx) {
  return whale_rt_comm_bytes(ctx, 0) + whale_rt_comm_bytes(ctx, 1) +
         whale_rt_comm_bytes(ctx, 3) + whale_rt_comm_bytes(ctx, 4) +
         whale_rt_comm_bytes(ctx, 5) + whale_rt_comm_bytes(ctx, 6);
}

} // namespace

void replacePlan(PlannedModel &plan, PlannedModel &&next) {
  plan.others.clear();
  plan.ranks = mlir::OwningOpRef<mlir::ModuleOp>();
  plan.planned = mlir::OwningOpRef<mlir::ModuleOp>();
  plan = std::move(next);
}

std::string PlannedRun::TraceWriter::write() {
  std::string p = std::move(path);
  path.clear();
  if (!p.empty() && of &&
      whale_rt_comm_write_trace(of.get(), p.c_str()) != WHALE_RT_OK)
    return "cannot write the trace to '" + p + "'";
  return "";
}

PlannedRun::PlannedRun(Interpreter &interp, const TrainOptions &options,
                       TrainResult &result)
    : interp(interp), options(options), result(result),
      mpiBase(options.mpiCommunicator),
      survivorsComm(nullptr, whale_rt_mpi_comm_free),
      comm(nullptr, whale_rt_comm_destroy), traceWriter{comm, ""},
      host(nullptr, whale_rt_context_destroy),
      control(deviceControlFile(options.controlPath)) {
  programOf = [this](const RankSlot &slot) -> const StageProgram & {
    return (*stagesOf)[slot.stage].program;
  };
}

PlannedRun::~PlannedRun() = default;

void PlannedRun::phase(const std::string &what) const {
  if (options.onPhase)
    options.onPhase(what);
}

std::string PlannedRun::startProcesses() {
  char why[512] = "";
  if (whale_rt_mpi_init_on(options.mpiCommunicator, &processRank, &processCount,
                           why, sizeof why) != WHALE_RT_OK)
    return why;
  if (std::string err =
          layoutProcesses(processRank, processCount,
                          static_cast<int64_t>(cluster.devices.size()), layout);
      !err.empty())
    return err + " (the cluster's)";
  return checkProcessHosts();
}

std::string PlannedRun::checkProcessHosts() {
  // Where the cluster file names its machines, each device's process must
  // run on the host of the device's node.
  if (!llvm::any_of(cluster.hosts,
                    [](const std::string &h) { return !h.empty(); }))
    return "";
  constexpr int64_t kName = 256;
  std::vector<char> names(static_cast<size_t>(processCount) * kName);
  std::vector<int32_t> cores(static_cast<size_t>(processCount));
  if (whale_rt_mpi_allocation_on(options.mpiCommunicator, names.data(), kName,
                                 cores.data()) != WHALE_RT_OK)
    return "the processes could not tell each other their hosts";
  for (size_t d = 0; d < cluster.devices.size(); ++d) {
    int node = cluster.devices[d].node;
    const int32_t p = layout.ownerOf(static_cast<int64_t>(d));
    const std::string &expected = cluster.hosts[node];
    std::string actual = names.data() + p * kName;
    if (!expected.empty() && expected != actual)
      return "device " + std::to_string(d) + " is on node " +
             cluster.nodes[node] + " (host " + expected + "), but process " +
             std::to_string(p) + ", which runs it, runs on " + actual +
             ": start the processes in the order of the cluster file's "
             "devices (one per device or per equal block of them, host by "
             "host)";
  }
  return "";
}

std::string PlannedRun::start() {
  if (!parseCluster(options.cluster, cluster, error) ||
      !checkClusterDevices(cluster, error))
    return error;
  if (options.processes)
    if (std::string err = startProcesses(); !err.empty())
      return err;
  traceWriter.path = processTracePath(options.tracePath, processRank);

  if (!(model =
            findModel(interp, options.model, /*needsTrainBlock=*/true, error)))
    return error;
  settings = trainSettings(model, options.steps, options.seed);
  if (std::string err = settings.checkLength(plan::trainBatch(model));
      !err.empty())
    return err;

  shared = sharedThreads(cluster, options.threads);
  if (std::string err = checkProcessThreads(cluster, options.threads);
      !err.empty())
    return err;
  planOptions.even = options.evenPlan;
  planOptions.defaultThreads = shared;
  planOptions.fuse = options.fuse;
  planOptions.overlap = options.overlap;
  planOptions.ampStorage = options.ampStorage;
  planOptions.gemmEpilogues = options.gemmEpilogues;
  // The whole elastic schedule is checked before the first step, not hours
  // later when a change is due; a control file's request when it comes.
  for (const ElasticChange &change : options.elastic) {
    Cluster next;
    PlannedModel trial;
    std::string why;
    const bool ok = checkDevices(change.cluster, next, trial, why);
    replacePlan(trial, PlannedModel());
    if (!ok)
      return "the elastic change after step " +
             std::to_string(change.afterStep) + " to " + change.cluster +
             " cannot be made: " + why;
  }

  // The global batch, in a context of its own.
  if (!(source = runDataSource(model, options, error)))
    return error;
  host.reset(whale_rt_context_create("host", 1, 0, settings.seed));
  for (mlir::Type t : model.getArgumentTypes()) {
    whale_rt_tensor *in =
        newTensor(host.get(), mlir::cast<mlir::RankedTensorType>(t), error);
    if (!in)
      return error;
    global.push_back(in);
  }

  {
    PlannedModel firstPlan;
    phase("planning the model over " + std::to_string(cluster.devices.size()) +
          " devices");
    if (!planModel(interp, options.model, cluster, planOptions, firstPlan,
                   error))
      return error;
    phase("compiling the rank programs");
    if (std::string err = openRanks(std::move(firstPlan)); !err.empty())
      return err;
    phase("");
  }
  if (options.processes)
    if (std::string err = checkSameJob(); !err.empty())
      return err;
  if (std::string err = loadCheckpoint(); !err.empty())
    return err;
  if (std::string err = checkSchedule(); !err.empty())
    return err;
  return openEvaluation();
}

std::string PlannedRun::checkSameJob() {
  // Every process must run the same job: the rank programs, the steps and
  // the seed, hashed and compared before the first step.
  std::string text;
  llvm::raw_string_ostream os(text);
  plan.ranks->print(os);
  os << "|steps " << settings.steps << "|seed " << settings.seed;
  uint64_t h = llvm::xxh3_64bits(text);
  double mine[2] = {double(h >> 32), double(h & 0xffffffffu)};
  std::vector<double> all;
  if (!gatherFromProcesses(comm.get(), layout, {mine[0], mine[1]}, all))
    return "the processes could not compare their plans";
  for (int32_t p = 0; p < processCount; ++p)
    if (all[2 * p] != mine[0] || all[2 * p + 1] != mine[1])
      return "process " + std::to_string(p) +
             " runs another job than process " + std::to_string(processRank) +
             " (its script, options or cluster differ): every process must "
             "be started alike";
  return "";
}

std::string PlannedRun::loadCheckpoint() {
  if (options.loadPath.empty())
    return "";
  if (isRankCheckpoint(options.loadPath)) {
    if (std::string err = loadRankCheckpoint(); !err.empty())
      return err;
  } else {
    // Load once, then hand each rank its stage's part.
    if (std::string err =
            whale::loadCheckpoint(host.get(), options.loadPath, plan.model,
                                  allParams, settings.stateCount, first);
        !err.empty())
      return err;
    if (std::string err =
            copyRanksState(host.get(), ranks, programOf, settings.stateCount,
                           /*toRanks=*/true);
        !err.empty())
      return err;
  }
  return checkResumable(options.loadPath, first, settings.steps);
}

std::string PlannedRun::checkSchedule() {
  const int64_t steps = settings.steps;
  // A failure asked for by a test must be one that can happen: a silent
  // no-op would pass a recovery test that tested nothing. Its device is one
  // of the step's devices: those of the last elastic change before it
  // (issue 92 item 18), else the run's first.
  int64_t devicesThen = static_cast<int64_t>(cluster.devices.size());
  for (const ElasticChange &c : options.elastic) {
    Cluster then;
    std::string ignored; // a change's own errors are said below
    if (c.afterStep < options.failStep &&
        parseCluster(c.cluster, then, ignored))
      devicesThen = static_cast<int64_t>(then.devices.size());
  }
  if (options.failStep > 0 &&
      (options.failDevice < 0 || options.failDevice >= devicesThen ||
       options.failStep <= first || options.failStep > steps))
    return "--fail-rank " + std::to_string(options.failDevice) + "@" +
           std::to_string(options.failStep) + ": expected a device from 0 to " +
           std::to_string(devicesThen - 1) + " (the devices of step " +
           std::to_string(options.failStep) +
           ") and a step this run trains, from " + std::to_string(first + 1) +
           " to " + std::to_string(steps);
  // The changes of devices still to come, checked against the steps.
  for (size_t i = 0; i < options.elastic.size(); ++i) {
    int64_t at = options.elastic[i].afterStep;
    if (at <= first || at >= steps ||
        (i && at <= options.elastic[i - 1].afterStep))
      return "elastic change " + std::to_string(i + 1) + " comes after step " +
             std::to_string(at) +
             ": the changes come after steps in increasing order, between "
             "step " +
             std::to_string(first + 1) + " and step " +
             std::to_string(steps - 1);
  }
  return "";
}

std::string PlannedRun::openEvaluation() {
  if (settings.evalEvery <= 0)
    return "";
  if (!(evalSource = makeDataSource(model, error, "eval_data")))
    return error;
  mlir::OwningOpRef<mlir::ModuleOp> forward = hostForward(interp);
  if (!forward || !(evalProgram = JitProgram::compile(*forward, error)) ||
      !(evalForward = evalProgram->lookup(plan.model)))
    return "compiling the held-out evaluation failed: " + error;
  if (ampBf16(model))
    whale_rt_set_amp(host.get(), WHALE_RT_AMP_BF16);
  return "";
}

std::string PlannedRun::compileRanks(mlir::ModuleOp module) {
  Programs p{
      module, JitProgram::compile(module, error, options.traceSites), {}};
  if (!p.jit)
    return "compiling the rank programs failed: " + error;
  p.stages.resize(plan.stages);
  for (int64_t s = 0; s < plan.stages; ++s) {
    Stage &stage = p.stages[s];
    std::string name = plan.model + "_stage" + std::to_string(s);
    auto fn = module.lookupSymbol<mlir::func::FuncOp>(name);
    stage.entry = p.jit->lookup(name);
    if (!fn || !stage.entry)
      return "no rank program for stage " + std::to_string(s);
    if (!describeStage(fn, stage.program, error))
      return error;
  }
  programs.push_back(std::move(p));
  return "";
}

std::string PlannedRun::openRanks(PlannedModel &&next) {
  ++planVersion;
  result.stepsOnLastPlan = 0; // the new ranks' counters start at 0
  ranks.clear();              // before the communicator they are bound to
  comm.reset();
  programs.clear();
  replacePlan(plan, std::move(next));
  if (std::string err = compileRanks(*plan.ranks); !err.empty())
    return err;
  for (const RankVariant &v : plan.others)
    if (std::string err = compileRanks(*v.ranks); !err.empty())
      return err;
  auto stageOf = [&](int64_t s, int64_t replica) -> const Stage & {
    mlir::ModuleOp module = plan.ranksOf(replica);
    for (const Programs &p : programs)
      if (p.module == module)
        return p.stages[s];
    return programs.front().stages[s];
  };
  stagesOf = &programs.front().stages;
  allParams.clear();
  for (const Stage &st : *stagesOf)
    allParams.insert(allParams.end(), st.program.params.begin(),
                     st.program.params.end());

  const int64_t devices = static_cast<int64_t>(cluster.devices.size());
  comm.reset(options.processes
                 ? processCommunicator(layout, mpiBase, kCommTimeoutSeconds)
                 : whale_rt_comm_create(static_cast<int32_t>(devices),
                                        kCommTimeoutSeconds));
  if (!comm)
    return "cannot make a communicator for " + std::to_string(devices) +
           " ranks";
  if (!options.tracePath.empty()) {
    whale_rt_comm_enable_trace(comm.get());
    // A profiling run times the steps an untraced run takes.
    if (options.traceSites)
      whale_rt_comm_set_trace_checks(comm.get(), 0);
  }
  GridShape shape{static_cast<int32_t>(plan.stages),
                  static_cast<int32_t>(plan.replicas),
                  std::vector<int32_t>(plan.grid.begin(), plan.grid.end())};
  const std::vector<int64_t> rows = plan.replicaRows();
  for (int64_t s = 0; s < plan.stages; ++s)
    for (int64_t r = 0; r < plan.replicas; ++r) {
      int64_t device = plan.grid[s * plan.replicas + r];
      if (!layout.owns(device))
        continue; // another process's rank
      const DeviceSpec &spec = cluster.devices[device];
      RankSlot place{s, r, device, firstRowOf(rows, plan.rowGroup, r)};
      const Stage &program = stageOf(s, r);
      OpenedRank rank;
      if (std::string err = openRank(
              runtimeDeviceName(spec, device), threadsOf(spec, shared),
              spec.memory, settings.seed, ampBf16(model), comm.get(), shape,
              place, program.entry, program.program.inputs, rank);
          !err.empty())
        return err;
      ranks.push_back(std::move(rank));
    }
  placeRanks(ranks, options.processes);
  return "";
}

std::string PlannedRun::gatherToHost() {
  return gatherStateOnHosts(comm.get(), layout, host.get(), ranks, programOf,
                            settings.stateCount, plan.stages, plan.replicas,
                            plan.grid);
}

bool PlannedRun::beginSteps() {
  loop = loopSetup(options, settings, plan.globalBatch);
  return begin(loop, first, *source, global);
}

std::string PlannedRun::saveNow(const std::string &path) {
  if (std::string err = gatherToHost(); !err.empty())
    return err;
  if (processRank > 0)
    return "";
  return saveCheckpoint(host.get(), path, plan.model, stepsDone(),
                        settings.seed, allParams, settings.stateCount);
}

std::string
PlannedRun::hostParameters(std::map<std::string, std::vector<float>> &out) {
  if (std::string err = gatherToHost(); !err.empty())
    return err;
  return readParameters(host.get(), allParams, out);
}

std::string PlannedRun::setParameters(
    const std::vector<Training::ParameterValues> &values) {
  if (options.processes)
    return "parameters are written between steps in one process only, not "
           "under mpirun";
  std::vector<const Parameter *> params;
  for (const Training::ParameterValues &v : values) {
    auto p = std::find_if(allParams.begin(), allParams.end(),
                          [&](const Parameter &q) { return q.name == v.name; });
    if (p == allParams.end())
      return "no parameter '" + v.name + "'";
    params.push_back(&*p);
  }
  // The whole state on the host, the parameters changed there, and every
  // rank's part of them (and of the rest, unchanged) handed back.
  if (std::string err = gatherToHost(); !err.empty())
    return err;
  for (size_t i = 0; i < values.size(); ++i)
    if (std::string err = writeParameter(host.get(), *params[i],
                                         values[i].values, values[i].count);
        !err.empty())
      return err;
  return copyRanksState(host.get(), ranks, programOf, settings.stateCount,
                        /*toRanks=*/true);
}

bool PlannedRun::stopAsked() {
  // Under mpirun every process stops after the same step, as they agreed
  // with the step's losses (a signal or the host's stop on any of them).
  return options.processes ? stopAgreed
                           : interruptRequested() || hostStopRequested();
}

std::vector<int64_t> PlannedRun::replicaRows() const {
  // Data replica r computes rows [sum of the shares before it, + its own):
  // a shard group sharing its rows is one.
  return dataReplicaRows(plan.replicaRows(), plan.rowGroup);
}

TrainLoop::StepEnd PlannedRun::runStep(int64_t step, double lrFactor,
                                       int64_t startNs) {
  const std::string name = "step " + std::to_string(step + 1);
  const bool inject = !injected && options.failStep == step + 1;
  injected = injected || inject;
  InjectedFailure failure;
  if (inject)
    failure = {options.failDevice, step + 1, options.processes};
  traceOnlyEvery(comm.get(), step, options.traceEvery);
  StepOutcome outcome = whale::runStep(ranks, global, comm.get(), rankThreads,
                                       step, lrFactor, failure);
  std::vector<double> &losses = outcome.losses;
  whale_rt_comm_trace_driver(comm.get(), "step", startNs,
                             whale_rt_now_ns() - startNs);
  StepEnd end;
  if (!outcome.error.empty() && outcome.failedDevice >= 0 &&
      !options.processes && (store.step() >= 0 || lastSaved() >= 0)) {
    // Recover from the store (or the last checkpoint): the survivors
    // re-planned, the steps since that state run again.
    RecoveryReport report;
    report.failedStep = step + 1;
    report.failure = outcome.error;
    if (std::string err = recover(outcome.failedDevice, report); !err.empty()) {
      end.error = name + ": " + outcome.error + "; recovering failed: " + err;
      return end;
    }
    result.recoveries.push_back(report);
    end.resumedAfter = report.resumedAfter;
    return end;
  }
  // Under mpirun a rank that failed ends here, unless processes were lost
  // and the survivors recover; else its process ends the world (the CLI
  // calls MPI_Abort), so no other waits on it.
  if (options.processes && !outcome.error.empty()) {
    end = recoverFromLoss(step, outcome.error);
    if (!end.error.empty())
      end.error = name + ": " + end.error;
    return end;
  }
  if (options.processes) {
    // Every rank's loss, from every process; the sum below then runs over
    // them in the same order as in one process.
    std::vector<double> own = losses;
    stopAgreed = interruptRequested() || hostStopRequested();
    if (std::string err = gatherRankLosses(comm.get(), layout, ranks, own,
                                           plan.grid, losses, &stopAgreed);
        !err.empty()) {
      end = recoverFromLoss(step, err);
      if (!end.error.empty())
        end.error = name + ": " + end.error;
      return end;
    }
  }
  if (!outcome.error.empty()) {
    end.error = name + ": " + outcome.error;
    return end;
  }
  end.error = sumLoss(losses, ranks, step, end.loss);
  if (end.error.empty())
    ++result.stepsOnLastPlan;
  return end;
}

std::string PlannedRun::evaluate(double &loss) {
  if (std::string err = gatherToHost(); !err.empty())
    return err;
  return evaluateOnHost(host.get(), evalForward, *evalSource, global,
                        settings.evalSteps, loss);
}

std::string PlannedRun::save(int64_t nextStep, bool last) {
  return saveState(nextStep, /*gatherAnyway=*/last && options.keepParameters);
}

TrainLoop::StepEnd PlannedRun::afterStep(int64_t done) {
  // The store after every replicateEvery-th step (none before the first:
  // the parameters are made by the first step's programs).
  StepEnd end;
  if (options.replicateEvery <= 0 ||
      (done - first) % options.replicateEvery != 0 || done >= settings.steps)
    return end;
  if (std::string err = updateStore(done); !err.empty()) {
    // The failure is after step `done`, not during it.
    end = recoverFromLoss(done, err);
    if (!end.error.empty())
      end.error = "keeping the state in memory after step " +
                  std::to_string(done) + ": " + end.error;
  }
  return end;
}

std::string PlannedRun::finish() {
  // The parameters on the host, where the last save did not put them there.
  if (options.keepParameters) {
    if (options.savePath.empty())
      if (std::string err = gatherToHost(); !err.empty())
        return err;
    if (std::string err =
            readParameters(host.get(), allParams, result.parameters);
        !err.empty())
      return err;
  }
  if (std::string err = gatherFigures(); !err.empty())
    return err;
  if (std::string err = traceWriter.write(); !err.empty())
    return err;
  store.wait();
  result.storeCopySeconds = store.copiedSeconds();
  result.processRank = processRank;
  return "";
}

std::string PlannedRun::gatherFigures() {
  const int64_t devices = static_cast<int64_t>(cluster.devices.size());
  result.peakMemory.assign(devices, 0);
  result.localBatches.assign(devices, 0);
  // Equal devices share evenly whatever their rate: only a balance over
  // devices that differ rests on the nominal rates.
  result.nominalRates.clear();
  if (std::adjacent_find(plan.deviceFlops.begin(), plan.deviceFlops.end(),
                         std::not_equal_to<>()) != plan.deviceFlops.end())
    result.nominalRates = plan.nominalRates;
  const std::vector<int64_t> rows = plan.replicaRows();
  result.stepGraphs = graphReport(ranks);
  for (const OpenedRank &rank : ranks) {
    int64_t device = rank.place.device;
    result.peakMemory[device] = whale_rt_memory_peak(rank.ctx.get());
    result.localBatches[device] = rows[rank.place.replica];
  }
  for (const OpenedRank &rank : ranks) {
    result.commBytes.push_back(bytesMoved(rank.ctx.get()));
    result.allToAllBytes.push_back(whale_rt_comm_bytes(rank.ctx.get(), 4));
  }
  if (!options.processes || ranks.empty())
    return "";
  // Each process knows its own ranks' figures: every process gets all
  // (peak memory, rows, bytes moved, of which all-to-all).
  constexpr int kFigures = 4;
  std::vector<double> all;
  if (!gatherDeviceFigures(
          comm.get(), layout, ranks, kFigures,
          [&](const OpenedRank &rank, double *out) {
            const int64_t device = rank.place.device;
            out[0] = double(result.peakMemory[device]);
            out[1] = double(result.localBatches[device]);
            out[2] = double(bytesMoved(rank.ctx.get()));
            out[3] = double(whale_rt_comm_bytes(rank.ctx.get(), 4));
          },
          all))
    return "the processes could not exchange their figures";
  result.commBytes.assign(devices, 0);
  result.allToAllBytes.assign(devices, 0);
  for (int64_t p = 0; p < devices; ++p) {
    result.peakMemory[p] = static_cast<int64_t>(all[kFigures * p]);
    result.localBatches[p] = static_cast<int64_t>(all[kFigures * p + 1]);
  }
  // In rank order, as the ranks of one process list them.
  for (int64_t i = 0; i < plan.stages * plan.replicas; ++i) {
    result.commBytes[i] =
        static_cast<int64_t>(all[kFigures * plan.grid[i] + 2]);
    result.allToAllBytes[i] =
        static_cast<int64_t>(all[kFigures * plan.grid[i] + 3]);
  }
  return "";
}

} // namespace whale
