//===- RunPlan.cpp - training from a compiled plan ------------------------===//
//
// The compiled plan's ranks (runtime/exec/OpenedBundle.h) stepped by the one
// train loop (runtime/exec/TrainLoop.h), as `whale run` steps a plan's: the
// same data order, losses, held-out losses, metrics and checkpoints. At the
// step boundaries an elastic schedule names, the job goes on under another
// compiled plan of the model, its state moved in memory
// (runtime/state/MoveState.h). When a rank fails, in one process, it goes
// on under a fallback plan for the devices left, from the state kept in
// memory or the last checkpoint (runtime/state/RecoveryState.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/RunPlan.h"

#include "runtime/exec/BatchRows.h"
#include "runtime/exec/Checkpoint.h"
#include "runtime/exec/ControlFile.h"
#include "runtime/exec/DataSource.h"
#include "runtime/exec/Interrupt.h"
#include "runtime/exec/OpenedBundle.h"
#include "runtime/exec/RankThreads.h"
#include "runtime/exec/TrainLoop.h"
#include "runtime/state/MoveState.h"
#include "runtime/state/RecoveryState.h"
#include "runtime/store/CheckpointSet.h"
#include "support/InputFile.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>

namespace whale {
namespace {

/// Whether every device of `m` is a CPU (its tensors host memory).
bool onHost(const PlanManifest &m) {
  return std::all_of(
      m.devices.begin(), m.devices.end(),
      [](const RankDevice &d) { return d.name.rfind("cpu:", 0) == 0; });
}

/// A compiled plan's ranks, threads of this process or, under mpirun, of
/// each process its block; the plan replaced at the elastic schedule's
/// steps.
class BundleRun : public TrainLoop {
public:
  BundleRun(const RunPlanOptions &options, const BundleOverrides &overrides,
            const ProcessWorld &world, std::unique_ptr<OpenedBundle> first,
            RunPlanResult &result)
      : options(options), overrides(overrides), world(world),
        plan(std::move(first)), result(result) {}

  /// The global batch and the host's context; the held-out evaluation;
  /// the checkpoint the run starts from. "" or what fails the run.
  std::string start(int64_t &firstStep);
  Outcome runSteps(int64_t firstStep);
  /// The trace of the last plan's ranks; "" or why it was not written.
  std::string writeTrace();
  /// The ranks of the plan the run is on.
  int64_t ranks() const { return plan->m.stages * plan->m.replicas; }

private:
  StepEnd runStep(int64_t step, double lrFactor, int64_t startNs) override;
  std::string beforeStep(int64_t step) override;
  StepEnd afterStep(int64_t done) override;
  std::string evaluate(double &loss) override;
  std::string save(int64_t nextStep, bool last) override;
  bool stopAsked() override {
    return world.processes ? stopAgreed : interruptRequested();
  }
  bool reports() const override { return world.rank <= 0; }
  std::vector<int64_t> replicaRows() const override {
    return dataReplicaRows(plan->m.localBatches, plan->m.rowGroup);
  }

  std::string checkSameJobOnProcesses();
  std::string loadCheckpoint(int64_t &firstStep);
  /// Under mpirun every process gets the whole state (each part from the
  /// process holding it): each evaluates alike, and process 0 saves.
  std::string gatherToHost();
  std::string changePlan(const ScheduledChange &change, int64_t step);
  /// Checks the recovery options against the plan: one process, a device
  /// and a step the run has, fallbacks of the same job.
  std::string checkRecovery(int64_t firstStep);
  /// After the rank on device `lost` failed: the job on the first fallback
  /// that runs on the devices left, from the store or the last checkpoint.
  std::string recover(int64_t lost, ExecRecovery &report);
  /// The plan the run is on now, in place of the last.
  void replacePlan(std::unique_ptr<OpenedBundle> next);

  const RunPlanOptions &options;
  const BundleOverrides &overrides;
  const ProcessWorld world;
  std::unique_ptr<OpenedBundle> plan;
  RunPlanResult &result;
  /// The settings of the first plan: a change keeps the schedule.
  TrainSettings schedule;

  // The global batch, in a context of its own.
  std::unique_ptr<DataSource> source;
  ContextPtr host{nullptr, whale_rt_context_destroy};
  std::vector<whale_rt_tensor *> global;
  /// Each rank's thread, kept from step to step (rank i on thread i).
  RankThreads threads;

  // Held-out evaluation (eval_every): the model's forward pass on the host.
  LoadedLibrary evalLibrary;
  RankEntry evalForward = nullptr;
  std::unique_ptr<DataSource> evalSource;

  /// --control: a file a person writes a compiled plan's folder into.
  std::optional<ControlFile> control;
  int64_t startStep = 0;   ///< steps done before this run (a checkpoint's)
  size_t nextChange = 0;   ///< the elastic schedule's next change
  bool checked = false;    ///< the ranks' parameters, after their first step
  bool stopAgreed = false; ///< under mpirun: some process was asked to stop

  /// --replicate-every: the state in memory, of the plan numbered
  /// `planVersion` (each plan the run goes on under has its own).
  StateStore store;
  int64_t planVersion = 0;
  bool injected = false; ///< --fail-rank's failure happens once a job
};

std::string BundleRun::start(int64_t &firstStep) {
  schedule = plan->m.settings;
  std::string error;
  if (!options.controlPath.empty()) {
    control.emplace(
        options.controlPath, "the folder of one compiled plan of the model",
        [](const std::string &folder) -> std::string {
          struct stat st;
          const std::string manifest = folder + "/" + kManifestFileName;
          return ::stat(manifest.c_str(), &st) == 0
                     ? ""
                     : "no compiled plan is in " + folder + " (it has no " +
                           kManifestFileName + ")";
        });
    if (std::string err = control->checkAtStart(); !err.empty())
      return err;
  }
  if (!(source = openDataSource(plan->m.data, error)))
    return error;
  host.reset(whale_rt_context_create("host", 1, 0, schedule.seed));
  for (const TensorSpec &t : plan->m.data.inputs) {
    whale_rt_tensor *in = newTensor(host.get(), t, error);
    if (!in)
      return error;
    global.push_back(in);
  }
  if (world.processes)
    if (std::string err = checkSameJobOnProcesses(); !err.empty())
      return err;
  // Held-out evaluation: the parameters gathered on the host and the
  // model's forward pass there, over eval_data's first batches, as `whale
  // run` evaluates.
  if (const std::optional<EvalProgram> &eval = plan->m.eval) {
    if (std::string err =
            openProgram(plan->folder, eval->file, plan->m, evalLibrary);
        !err.empty())
      return err;
    if (std::string err = entryOf(evalLibrary, "evaluation " + eval->file,
                                  eval->entry, evalForward);
        !err.empty())
      return err;
    if (!(evalSource = openDataSource(eval->data, error)))
      return error;
    if (plan->m.ampBf16)
      whale_rt_set_amp(host.get(), WHALE_RT_AMP_BF16);
  }
  // The whole schedule is read before the first step, not when a change
  // is due: every plan it names, of the same job.
  for (const ScheduledChange &change : options.elastic) {
    OpenedBundle next;
    std::string why = readBundle(change.target, overrides, next);
    if (why.empty())
      why = checkSameJob(plan->m, next.m);
    if (!why.empty())
      return "the elastic change after step " +
             std::to_string(change.afterStep) + " to " + change.target +
             " cannot be made: " + why;
  }
  if (std::string err = loadCheckpoint(firstStep); !err.empty())
    return err;
  startStep = firstStep;
  if (std::string err = checkRecovery(firstStep); !err.empty())
    return err;
  for (size_t i = 0; i < options.elastic.size(); ++i) {
    const int64_t at = options.elastic[i].afterStep;
    if (at <= firstStep || at >= schedule.steps)
      return "elastic change " + std::to_string(i + 1) + " comes after step " +
             std::to_string(at) + ": the changes come between step " +
             std::to_string(firstStep + 1) + " and step " +
             std::to_string(schedule.steps - 1);
  }
  return "";
}

std::string BundleRun::checkSameJobOnProcesses() {
  // Every process must run the same job: the manifest, the overrides and
  // the elastic schedule, hashed and compared before the first step.
  std::string manifest;
  if (std::string err =
          rt::readRegularFile(plan->folder + "/" + kManifestFileName,
                              "the compiled plan", rt::kMaxTextInput, manifest);
      !err.empty())
    return err;
  std::string job = manifest + "|steps " + std::to_string(schedule.steps) +
                    "|seed " + std::to_string(schedule.seed);
  for (const ScheduledChange &change : options.elastic)
    job += "|" + std::to_string(change.afterStep) + " " + change.target;
  const uint64_t h = hashBytes(job);
  std::vector<double> all;
  if (!gatherFromProcesses(plan->comm.get(), plan->layout,
                           {double(h >> 32), double(h & 0xffffffffu)}, all))
    return "the processes could not compare their plans";
  for (int32_t p = 0; p < world.count; ++p)
    if (all[2 * p] != all[2 * world.rank] ||
        all[2 * p + 1] != all[2 * world.rank + 1])
      return "process " + std::to_string(p) +
             " runs another job than process " + std::to_string(world.rank) +
             " (its compiled plan or options differ): every process must be "
             "started alike";
  return "";
}

std::string BundleRun::loadCheckpoint(int64_t &firstStep) {
  // A checkpoint of whale run or whale-exec, of any plan of the model: rank
  // files resharded into this plan's ranks as they load, or a single file
  // read once, each rank handed its part.
  firstStep = 0;
  if (options.loadPath.empty())
    return "";
  const PlanManifest &m = plan->m;
  if (isRankCheckpoint(options.loadPath)) {
    if (std::string err = loadRankFiles(options.loadPath, plan->state,
                                        plan->local(), firstStep);
        !err.empty())
      return err;
  } else {
    if (std::string err =
            whale::loadCheckpoint(host.get(), options.loadPath, m.model,
                                  plan->params, schedule.stateCount, firstStep);
        !err.empty())
      return err;
    if (std::string err = copyRanksState(
            host.get(), plan->ranks,
            [&](const RankSlot &slot) -> const StageProgram & {
              return plan->programOf(slot);
            },
            schedule.stateCount, /*toRanks=*/true);
        !err.empty())
      return err;
  }
  return checkResumable(options.loadPath, firstStep, schedule.steps);
}

TrainLoop::Outcome BundleRun::runSteps(int64_t firstStep) {
  TrainLoop::Setup setup;
  setup.settings = schedule;
  setup.globalBatch = plan->m.globalBatch;
  setup.savePath = options.savePath;
  setup.metricsPath = options.metricsPath;
  setup.samplesPath = options.samplesPath;
  setup.onStep = options.onStep;
  return run(setup, firstStep, *source, global);
}

TrainLoop::StepEnd BundleRun::runStep(int64_t step, double lrFactor,
                                      int64_t startNs) {
  whale_rt_comm *comm = plan->comm.get();
  std::vector<OpenedRank> &ranks = plan->ranks;
  InjectedFailure failure;
  if (!injected && options.failStep == step + 1) {
    injected = true;
    failure = {options.failDevice, step + 1, false};
  }
  StepOutcome outcome =
      whale::runStep(ranks, global, comm, threads, step, lrFactor, failure);
  whale_rt_comm_trace_driver(comm, "step", startNs,
                             whale_rt_now_ns() - startNs);
  StepEnd end;
  const std::string name = "step " + std::to_string(step + 1);
  if (!outcome.error.empty()) {
    end.error = name + ": " + outcome.error;
    // A failed rank in one process: the job goes on under a fallback plan,
    // the steps since the state it goes back to run again.
    if (outcome.failedDevice < 0 || world.processes ||
        (store.step() < 0 && lastSaved() < 0))
      return end;
    if (options.fallbacks.empty()) {
      end.error += " (with no --fallback plan to go on under, the job ends)";
      return end;
    }
    ExecRecovery report;
    report.failedStep = step + 1;
    report.failure = outcome.error;
    if (std::string err = recover(outcome.failedDevice, report); !err.empty()) {
      end.error += "; recovering failed: " + err;
      return end;
    }
    result.recoveries.push_back(report);
    end.error.clear();
    end.resumedAfter = report.resumedAfter;
    return end;
  }
  // The parameters the programs made, against the manifest's list.
  if (!checked) {
    checked = true;
    for (const OpenedRank &rank : ranks)
      if (std::string err =
              checkRankParameters(rank, plan->programOf(rank.place));
          !err.empty()) {
        end.error = err;
        return end;
      }
  }
  std::vector<double> &losses = outcome.losses;
  if (world.processes) {
    // Every rank's loss from every process, then summed in the order of one
    // process. Whether any process was asked to stop travels with them, so
    // that all stop after the same step and save together.
    std::vector<double> own = losses;
    stopAgreed = interruptRequested();
    if (std::string err = gatherRankLosses(comm, plan->layout, ranks, own,
                                           plan->m.grid, losses, &stopAgreed);
        !err.empty()) {
      end.error = name + ": " + err;
      return end;
    }
  }
  end.error = sumLoss(losses, ranks, step, end.loss);
  return end;
}

std::string BundleRun::gatherToHost() {
  const PlanManifest &m = plan->m;
  return gatherStateOnHosts(
      plan->comm.get(), plan->layout, host.get(), plan->ranks,
      [&](const RankSlot &slot) -> const StageProgram & {
        return plan->programOf(slot);
      },
      schedule.stateCount, m.stages, m.replicas, m.grid);
}

std::string BundleRun::evaluate(double &loss) {
  if (std::string err = gatherToHost(); !err.empty())
    return err;
  return evaluateOnHost(host.get(), evalForward, *evalSource, global,
                        schedule.evalSteps, loss);
}

std::string BundleRun::save(int64_t nextStep, bool) {
  if (options.saveRanks)
    return saveRankFiles(options.savePath, plan->state, nextStep, schedule.seed,
                         plan->local());
  if (std::string err = gatherToHost(); !err.empty())
    return err;
  if (world.rank > 0)
    return "";
  return saveCheckpoint(host.get(), options.savePath, plan->m.model, nextStep,
                        schedule.seed, plan->params, schedule.stateCount);
}

TrainLoop::StepEnd BundleRun::afterStep(int64_t done) {
  // The store after every replicateEvery-th step (none before the first:
  // the parameters are made by the first step's programs).
  StepEnd end;
  if (options.replicateEvery <= 0 ||
      (done - startStep) % options.replicateEvery != 0 ||
      done >= schedule.steps)
    return end;
  if (std::string err = keepInStore(store, plan->state, planVersion, done,
                                    schedule.seed, plan->local());
      !err.empty())
    end.error = "keeping the state in memory after step " +
                std::to_string(done) + ": " + err;
  else
    ++result.storeUpdates;
  return end;
}

std::string BundleRun::checkRecovery(int64_t firstStep) {
  const bool asked = options.replicateEvery > 0 || !options.fallbacks.empty() ||
                     options.failStep >= 0;
  if (asked && world.processes)
    return "--replicate-every, --fallback and --fail-rank recover a failed "
           "rank in one process; under mpirun whale-exec does not recover "
           "yet (whale run does)";
  const int64_t devices = static_cast<int64_t>(plan->m.devices.size());
  if (options.failStep >= 0 &&
      (options.failDevice < 0 || options.failDevice >= devices ||
       options.failStep <= firstStep || options.failStep > schedule.steps))
    return "--fail-rank " + std::to_string(options.failDevice) + "@" +
           std::to_string(options.failStep) + ": expected a device from 0 to " +
           std::to_string(devices - 1) + " and a step this run trains, from " +
           std::to_string(firstStep + 1) + " to " +
           std::to_string(schedule.steps);
  // Every fallback is read before the first step, as the schedule's plans
  // are: a plan of another job is refused now, not when a rank fails.
  for (const std::string &folder : options.fallbacks) {
    OpenedBundle next;
    std::string why = readBundle(folder, overrides, next);
    if (why.empty())
      why = checkSameJob(plan->m, next.m);
    if (!why.empty())
      return "the fallback plan " + folder + " cannot take the job: " + why;
  }
  return "";
}

std::string BundleRun::recover(int64_t lost, ExecRecovery &report) {
  const auto t0 = std::chrono::steady_clock::now();
  // The state to go on from: the store's workers are the plan's ranks.
  int64_t lostRank = -1;
  for (size_t i = 0; i < plan->ranks.size(); ++i)
    if (plan->ranks[i].place.device == lost)
      lostRank = static_cast<int64_t>(i);
  SurvivingState surviving;
  if (std::string err = survivingState(store, lostRank, options.savePath,
                                       lastSaved(), surviving);
      !err.empty())
    return err;
  // The first fallback that runs on the devices left.
  std::vector<RankDevice> left = plan->m.devices;
  const RankDevice gone = left[static_cast<size_t>(lost)];
  left.erase(left.begin() + lost);
  std::unique_ptr<OpenedBundle> next;
  std::string folder, whyNot;
  for (const std::string &f : options.fallbacks) {
    next = std::make_unique<OpenedBundle>();
    if (std::string err = readBundle(f, overrides, *next); !err.empty())
      return "the fallback plan " + f + ": " + err;
    std::string why = runsOnSurvivors(next->m.devices, left);
    if (why.empty()) {
      folder = f;
      break;
    }
    whyNot += "; " + f + ": " + why;
  }
  if (folder.empty())
    return "no --fallback plan runs on the " + std::to_string(left.size()) +
           " devices left without " + gone.name + " on " + gone.node + whyNot;
  StateMove move;
  if (std::string err =
          planMove(std::move(surviving.layout), next->state, move);
      !err.empty())
    return "resharding: " + err;
  move.held = std::move(surviving.held);
  report.source = surviving.source;
  report.resumedAfter = surviving.step;
  report.plan = folder;
  report.ranksBefore = plan->m.stages * plan->m.replicas;
  report.ranksAfter = next->m.stages * next->m.replicas;
  // The failed plan's ranks go before the fallback's open.
  plan->ranks.clear();
  if (std::string err = openBundle(*next, overrides, world, schedule.seed);
      !err.empty())
    return "opening the ranks of " + folder + ": " + err;
  if (std::string err = putPieces(move, next->local()); !err.empty())
    return err;
  replacePlan(std::move(next));
  report.movedBytes = move.reshard.movedBytes();
  report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  return "";
}

void BundleRun::replacePlan(std::unique_ptr<OpenedBundle> next) {
  plan = std::move(next);
  checked = false;
  // The store's next update fills buffers of its own. Until then its last
  // update, of the plan before, is still the job's state: in one process
  // its buffers are host memory, which the change left alone.
  ++planVersion;
}

std::string BundleRun::beforeStep(int64_t step) {
  // A change asked for by hand, checked before anything is stopped: a plan
  // that cannot take the run over is reported and the job goes on.
  std::string folder, why;
  if (control && step > startStep &&
      control->pollEverywhere(step, world.rank, plan->comm.get(),
                              world.processes ? &plan->layout : nullptr, folder,
                              why)) {
    const std::string after = "after step " + std::to_string(step);
    if (why.empty()) {
      OpenedBundle trial;
      why = readBundle(folder, overrides, trial);
      if (why.empty())
        why = checkSameJob(plan->m, trial.m);
      if (why.empty())
        return changePlan({step, folder}, step);
      result.controlErrors.push_back(after + ", " + folder + ": " + why);
    } else {
      result.controlErrors.push_back(after + ": " + why);
    }
  }
  if (nextChange < options.elastic.size() &&
      options.elastic[nextChange].afterStep == step)
    return changePlan(options.elastic[nextChange++], step);
  return "";
}

std::string BundleRun::changePlan(const ScheduledChange &change, int64_t step) {
  // Pause at this step boundary: the next plan's state, the move from the
  // old ranks' boxes to the new ones', the new ranks, the state into them.
  const auto t0 = std::chrono::steady_clock::now();
  const std::string after = " after step " + std::to_string(step);
  auto next = std::make_unique<OpenedBundle>();
  if (std::string err = readBundle(change.target, overrides, *next);
      !err.empty())
    return "changing to " + change.target + after + ": " + err;
  if (std::string err = checkSameJob(plan->m, next->m); !err.empty())
    return "changing to " + change.target + after + ": " + err;
  StateMove move;
  if (std::string err = planMove(plan->state, next->state, move); !err.empty())
    return "resharding" + after + ": " + err;
  // Under mpirun the same processes run the new plan's devices, each its
  // block of them.
  ProcessLayout nextLayout;
  if (world.processes)
    if (std::string err = layoutProcesses(
            world.rank, world.count,
            static_cast<int64_t>(next->m.devices.size()), nextLayout);
        !err.empty())
      return "changing to " + change.target + after + ": " + err +
             " (the new plan's)";
  const bool direct = onHost(plan->m) && onHost(next->m) && !world.processes;
  ExecChange report;
  report.afterStep = step;
  report.plan = change.target;
  report.ranksBefore = plan->m.stages * plan->m.replicas;
  report.ranksAfter = next->m.stages * next->m.replicas;
  LocalRanks old = plan->local();
  if (!direct)
    if (std::string err =
            takePieces(move, step, schedule.seed, old,
                       world.processes ? &nextLayout : nullptr, next->m.grid);
        !err.empty())
      return err + after;
  // Once its pieces are out, the old ranks go before the new ones open: a
  // device never holds both plans' state, and under mpirun the ranks bind
  // to MPI one plan at a time. Straight copies need both. The old
  // communicator stays until the state is in: a process that closed it
  // while another still used it would look lost to that one.
  if (!direct)
    plan->ranks.clear();
  if (std::string err = openBundle(*next, overrides, world, schedule.seed);
      !err.empty())
    return "opening the ranks of " + change.target + after + ": " + err;
  if (std::string err = direct ? copyPieces(move, old, next->local())
                               : putPieces(move, next->local());
      !err.empty())
    return err + after;
  replacePlan(std::move(next));
  report.movedBytes = move.reshard.movedBytes();
  report.stayedBytes = move.reshard.stayBytes;
  report.processBytes = move.processBytes;
  report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  result.changes.push_back(report);
  return "";
}

std::string BundleRun::writeTrace() {
  const std::string trace = processTracePath(options.tracePath, world.rank);
  if (!trace.empty() && plan && plan->comm &&
      whale_rt_comm_write_trace(plan->comm.get(), trace.c_str()) != WHALE_RT_OK)
    return "cannot write the trace to '" + trace + "'";
  return "";
}

} // namespace

/// Every function rank programs call, referenced here so that the linker
/// keeps it in the runner, which exports it (ENABLE_EXPORTS) for the
/// shared objects it loads.
extern "C" const void *const whale_exec_abi[] = {
#define WHALE_RT_ABI(name) reinterpret_cast<const void *>(&name),
#include "runtime/AbiSymbols.def"
};

RunPlanResult runCompiledPlan(const RunPlanOptions &options) {
  RunPlanResult result;
  auto fail = [&](std::string msg) {
    result.ok = false;
    result.error = std::move(msg);
    return result;
  };
  // Under mpirun (or srun) each process runs the ranks of its block of
  // devices (runtime/exec/Processes.h), as `mpirun whale run` does; MPI
  // starts first, so that every error names the process.
  ProcessWorld world;
  world.processes = options.processes;
  if (options.processes) {
    char why[512] = "";
    if (whale_rt_mpi_init(&world.rank, &world.count, why, sizeof why) !=
        WHALE_RT_OK)
      return fail(why);
    result.processRank = world.rank;
  }
  // A checkpoint folder is replaced whole at each save: never one that
  // holds anything else (checked before the run, not at its first save).
  if (options.saveRanks &&
      (options.savePath.empty() || isSingleFilePath(options.savePath)))
    return fail(options.savePath.empty()
                    ? "--save-ranks needs --save FOLDER: the folder its rank "
                      "files go into"
                    : "--save-ranks writes a folder of rank files: give "
                      "--save a folder, not the file " +
                          options.savePath);
  if (!options.savePath.empty() && !isSingleFilePath(options.savePath))
    if (std::string err = rt::checkReplaceableFolder(options.savePath);
        !err.empty())
      return fail("--save: " + err);

  const BundleOverrides overrides{
      options.steps,   options.seed,      options.dataPath,
      options.threads, options.tracePath, options.traceWithoutChecks};
  auto first = std::make_unique<OpenedBundle>();
  if (std::string err = readBundle(options.folder, overrides, *first);
      !err.empty())
    return fail(err);
  result.model = first->m.model;
  if (std::string err =
          openBundle(*first, overrides, world, first->m.settings.seed);
      !err.empty())
    return fail(err);
  result.ranks = first->m.stages * first->m.replicas;

  BundleRun run(options, overrides, world, std::move(first), result);
  int64_t firstStep = 0;
  if (std::string err = run.start(firstStep); !err.empty())
    return fail(err);
  if (!TrainLoop::intoResult(run.runSteps(firstStep), result))
    return result;
  if (std::string err = run.writeTrace(); !err.empty())
    return fail(err);
  result.ranks = run.ranks();
  result.ok = true;
  return result;
}

} // namespace whale
