//===- RunPlan.cpp - training from a compiled plan ------------------------===//
//
// The compiled plan's ranks (runtime/bundle/OpenedBundle.h) stepped by the one
// train loop (runtime/run/TrainLoop.h), as `whale run` steps a plan's: the
// same data order, losses, held-out losses, metrics and checkpoints. Here:
// the start, each step, held-out losses and saves; changes of plans and
// recovery are the run's other parts (runtime/bundle/BundleRun.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/bundle/RunPlan.h"

#include "runtime/bundle/BundleRun.h"
#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/checkpoint/CheckpointSet.h"
#include "runtime/checkpoint/RankFiles.h"
#include "support/InputFile.h"
#include "support/OutputFile.h"

#include <sys/stat.h>

#include <filesystem>
#include <memory>

namespace whale {

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
  scheduledDevices.clear();
  for (const ScheduledChange &change : options.elastic) {
    OpenedBundle next;
    std::string why = readBundle(change.target, overrides, next);
    if (why.empty())
      why = checkSameJob(plan->m, next.m);
    scheduledDevices.push_back(static_cast<int64_t>(next.m.devices.size()));
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
    failure = {options.failDevice, step + 1, world.processes};
  }
  traceOnlyEvery(comm, step, options.traceEvery);
  StepOutcome outcome =
      whale::runStep(ranks, global, comm, threads, step, lrFactor, failure);
  whale_rt_comm_trace_driver(comm, "step", startNs,
                             whale_rt_now_ns() - startNs);
  StepEnd end;
  const std::string name = "step " + std::to_string(step + 1);
  if (!outcome.error.empty())
    return recoverFrom(step, name, outcome.error, outcome.failedDevice);
  // The parameters the programs made, against the manifest's list.
  if (!checked) {
    checked = true;
    for (const OpenedRank &rank : ranks)
      if (std::string err = checkRankParameters(
              rank, plan->programOf(rank.place), schedule.stateCount);
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
        !err.empty())
      return recoverFrom(step, name, err, -1);
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

std::vector<int64_t> BundleRun::peakMemory() const {
  std::vector<int64_t> peaks;
  for (const OpenedRank &rank : plan->ranks)
    peaks.push_back(whale_rt_memory_peak(rank.ctx.get()));
  return peaks;
}

std::string BundleRun::writeTrace() {
  const std::string trace = processTracePath(options.tracePath, world.rank);
  if (!trace.empty() && plan && plan->comm &&
      whale_rt_comm_write_trace(plan->comm.get(), trace.c_str()) != WHALE_RT_OK)
    return "cannot write the trace to '" + trace + "'";
  return "";
}

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
  // devices (runtime/run/Processes.h), as `mpirun whale run` does; MPI
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
  if (!options.savePath.empty())
    if (std::string err = checkSaveDestination(options.savePath); !err.empty())
      return fail(err);
  // Where the run writes, checked before it trains rather than after, as
  // whale run checks (issue 92 item 9), and never a file of the bundle it
  // runs (item 1: --metrics B/plan.json appended to the manifest).
  for (auto [path, what] :
       {std::pair{processTracePath(options.tracePath, world.rank), "the trace"},
        std::pair{options.metricsPath, "metrics"},
        std::pair{isSingleFilePath(options.savePath) ? options.savePath
                                                     : std::string(),
                  "the checkpoint"}}) {
    if (path.empty())
      continue;
    if (std::string err = rt::checkOutputPath(path, what); !err.empty())
      return fail(err);
    std::error_code ec;
    for (const auto &entry :
         std::filesystem::directory_iterator(options.folder, ec))
      if (rt::sameFile(path, entry.path().string()))
        return fail(std::string(what) + " '" + path + "' is '" +
                    entry.path().string() +
                    "', a file of the plan this run reads; write it "
                    "elsewhere");
  }

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
  result.peakMemory = run.peakMemory();
  result.stepGraphs = graphReport(run.openedRanks());
  result.ok = true;
  return result;
}

} // namespace whale
