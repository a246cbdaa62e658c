//===- RunPlan.cpp - training from a compiled plan ------------------------===//

#include "runtime/exec/RunPlan.h"

#include "runtime/exec/Checkpoint.h"
#include "runtime/exec/CpuLevels.h"
#include "runtime/exec/DataSource.h"
#include "runtime/exec/PlanManifest.h"
#include "runtime/exec/Processes.h"
#include "runtime/exec/RankStep.h"
#include "runtime/exec/StepLog.h"
#include "runtime/store/CheckpointSet.h"
#include "support/InputFile.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <thread>

namespace whale {
namespace {

/// Seconds a rank waits on another before the run fails naming both.
constexpr double kCommTimeoutSeconds = 120;

/// The library `file` of the bundle in `folder` that this CPU runs best,
/// loaded once its checksum is the manifest's.
std::string openProgram(const std::string &folder, const std::string &file,
                        const PlanManifest &m, LoadedLibrary &library) {
  const std::string path = libraryForThisCpu(folder, file);
  return library.open(path, path.substr(folder.size() + 1), m.files);
}

/// An entry point the library itself defines; "" or why not.
std::string entryOf(const LoadedLibrary &library, const std::string &what,
                    const std::string &symbol, RankEntry &out) {
  out = reinterpret_cast<RankEntry>(library.symbol(symbol));
  return out ? "" : "the compiled " + what + " has no program '" + symbol +
                        "' of its own";
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
  int32_t processRank = -1, processCount = 0;
  if (options.processes) {
    char why[512] = "";
    if (whale_rt_mpi_init(&processRank, &processCount, why, sizeof why) !=
        WHALE_RT_OK)
      return fail(why);
    result.processRank = processRank;
  }
  // A checkpoint folder is replaced whole at each save: never one that
  // holds anything else (checked before the run, not at its first save).
  if (!options.savePath.empty() && !isSingleFilePath(options.savePath))
    if (std::string err = rt::checkReplaceableFolder(options.savePath);
        !err.empty())
      return fail("--save: " + err);
  const std::string folder = options.folder.empty() ? "." : options.folder;
  PlanManifest m;
  std::string error;
  if (!readManifest(folder + "/" + kManifestFileName, m, error))
    return fail(error);
  result.model = m.model;
  TrainSettings &settings = m.settings;
  if (options.steps)
    settings.steps = *options.steps;
  if (options.seed)
    settings.seed = *options.seed;
  if (std::string err = settings.checkLength(m.globalBatch); !err.empty())
    return fail(err);
  if (!options.dataPath.empty()) {
    if (m.data.kind != "text" && m.data.kind != "tokens")
      return fail("--data names the corpus of text(...) or tokens(...) data; "
                  "this plan's data is " +
                  m.data.kind + "(...)");
    m.data.path = options.dataPath;
  }

  const int64_t devices = static_cast<int64_t>(m.devices.size());
  ProcessLayout layout;
  if (options.processes) {
    if (std::string err =
            layoutProcesses(processRank, processCount, devices, layout);
        !err.empty())
      return fail(err + " (the plan's)");
  }

  // The rank programs. Their calls into the runtime resolve against this
  // process, which exports the runtime's C ABI.
  std::vector<std::unique_ptr<LoadedLibrary>> libraries;
  std::vector<std::vector<RankEntry>> entries;
  for (const ProgramLibrary &lib : m.libraries) {
    // Built for the best x86-64 level this CPU runs, where the bundle has it.
    auto loaded = std::make_unique<LoadedLibrary>();
    if (std::string err = openProgram(folder, lib.file, m, *loaded);
        !err.empty())
      return fail(err);
    entries.emplace_back();
    for (const StageProgram &st : lib.stages) {
      RankEntry fn = nullptr;
      if (std::string err = entryOf(*loaded, "rank programs " + lib.file,
                                    st.entry, fn);
          !err.empty())
        return fail(err);
      entries.back().push_back(fn);
    }
    libraries.push_back(std::move(loaded));
  }

  // The global batch, in a context of its own.
  std::unique_ptr<DataSource> source = openDataSource(m.data, error);
  if (!source)
    return fail(error);
  ContextPtr host(whale_rt_context_create("host", 1, 0, settings.seed),
                  whale_rt_context_destroy);
  std::vector<whale_rt_tensor *> global;
  for (const TensorSpec &t : m.data.inputs) {
    whale_rt_tensor *in = newTensor(host.get(), t, error);
    if (!in)
      return fail(error);
    global.push_back(in);
  }

  std::unique_ptr<whale_rt_comm, void (*)(whale_rt_comm *)> comm(
      options.processes
          ? processCommunicator(layout, nullptr, kCommTimeoutSeconds)
          : whale_rt_comm_create(static_cast<int32_t>(devices),
                                 kCommTimeoutSeconds),
      whale_rt_comm_destroy);
  if (!comm)
    return fail("cannot make a communicator for " + std::to_string(devices) +
                " ranks");
  if (!options.tracePath.empty()) {
    whale_rt_comm_enable_trace(comm.get());
    if (options.traceWithoutChecks)
      whale_rt_comm_set_trace_checks(comm.get(), 0);
  }
  const int total =
      options.threads > 0
          ? options.threads
          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int shared =
      std::max<int>(1, total / std::max<int>(1, static_cast<int>(devices)));
  GridShape shape{static_cast<int32_t>(m.stages),
                  static_cast<int32_t>(m.replicas),
                  std::vector<int32_t>(m.grid.begin(), m.grid.end())};
  std::vector<OpenedRank> ranks;
  // Each rank's thread, kept from step to step (rank i on thread i).
  RankThreads rankThreads;
  for (int64_t s = 0; s < m.stages; ++s)
    for (int64_t r = 0; r < m.replicas; ++r) {
      const int64_t device = m.grid[s * m.replicas + r];
      if (!layout.owns(device))
        continue; // another process's rank
      const RankDevice &dev = m.devices[device];
      ranks.emplace_back();
      if (std::string err =
              openRank(dev.name, dev.threads > 0 ? dev.threads : shared,
                       dev.memory, settings.seed, m.ampBf16, comm.get(), shape,
                       RankSlot{s, r, device, m.firstRow(r)},
                       entries[m.replicaLibrary[r]][s], m.program(s, r).inputs,
                       ranks.back());
          !err.empty())
        return fail(err);
    }
  result.ranks = m.stages * m.replicas;
  // Every process must run the same job: the manifest, the libraries'
  // sizes and the overrides, hashed and compared before the first step.
  auto gather = [&](std::vector<double> mine, std::vector<double> &all) {
    return gatherFromProcesses(comm.get(), layout, mine, all);
  };
  if (options.processes) {
    std::string manifest;
    if (std::string err =
            rt::readRegularFile(folder + "/" + kManifestFileName,
                                "the compiled plan", rt::kMaxTextInput,
                                manifest);
        !err.empty())
      return fail(err);
    uint64_t h = hashBytes(manifest + "|steps " +
                           std::to_string(settings.steps) + "|seed " +
                           std::to_string(settings.seed));
    std::vector<double> all;
    if (!gather({double(h >> 32), double(h & 0xffffffffu)}, all))
      return fail("the processes could not compare their plans");
    for (int32_t p = 0; p < processCount; ++p)
      if (all[2 * p] != all[2 * processRank] ||
          all[2 * p + 1] != all[2 * processRank + 1])
        return fail("process " + std::to_string(p) +
                    " runs another job than process " +
                    std::to_string(processRank) +
                    " (its compiled plan or options differ): every process "
                    "must be started alike");
  }

  // Every parameter of the model, stage by stage (replica 0's programs
  // name them all): what a single-file checkpoint holds.
  std::vector<Parameter> all;
  for (int64_t s = 0; s < m.stages; ++s) {
    const std::vector<Parameter> &ps = m.program(s, 0).params;
    all.insert(all.end(), ps.begin(), ps.end());
  }
  const ProgramOf programOf =
      [&](const RankSlot &slot) -> const StageProgram & {
    return m.program(slot.stage, slot.replica);
  };
  // Under mpirun every process gets the whole state (each part from the
  // process holding it): each evaluates alike, and process 0 saves.
  auto gatherToHost = [&]() {
    return gatherStateOnHosts(comm.get(), layout, host.get(), ranks, programOf,
                              settings.stateCount, m.stages, m.replicas,
                              m.grid);
  };
  auto save = [&](int64_t nextStep) -> std::string {
    if (std::string err = gatherToHost(); !err.empty())
      return err;
    if (processRank > 0)
      return "";
    return saveCheckpoint(host.get(), options.savePath, m.model, nextStep,
                          settings.seed, all, settings.stateCount);
  };

  // Held-out evaluation (eval_every): the parameters gathered on the host
  // and the model's forward pass there, over eval_data's first batches, as
  // `whale run` evaluates.
  LoadedLibrary evalLibrary;
  RankEntry evalForward = nullptr;
  std::unique_ptr<DataSource> evalSource;
  if (m.eval) {
    if (std::string err = openProgram(folder, m.eval->file, m, evalLibrary);
        !err.empty())
      return fail(err);
    if (std::string err = entryOf(evalLibrary, "evaluation " + m.eval->file,
                                  m.eval->entry, evalForward);
        !err.empty())
      return fail(err);
    if (!(evalSource = openDataSource(m.eval->data, error)))
      return fail(error);
    if (m.ampBf16)
      whale_rt_set_amp(host.get(), WHALE_RT_AMP_BF16);
  }
  auto evaluate = [&](double &loss) -> std::string {
    if (std::string err = gatherToHost(); !err.empty())
      return err;
    return evaluateOnHost(host.get(), evalForward, *evalSource, global,
                          settings.evalSteps, loss);
  };

  // A single-file checkpoint (of whale run or whale-exec, of any plan of
  // the model) read once, each rank handed its part.
  int64_t first = 0;
  if (!options.loadPath.empty()) {
    if (std::string err = loadCheckpoint(host.get(), options.loadPath, m.model,
                                         all, settings.stateCount, first);
        !err.empty())
      return fail(err);
    if (std::string err =
            checkResumable(options.loadPath, first, settings.steps);
        !err.empty())
      return fail(err);
    if (std::string err =
            copyRanksState(host.get(), ranks, programOf, settings.stateCount,
                           /*toRanks=*/true);
        !err.empty())
      return fail(err);
  }
  result.firstStep = first + 1;

  // Under mpirun the process of rank 0 reports and writes the metrics.
  TrainOptions logOptions;
  if (processRank <= 0) {
    logOptions.metricsPath = options.metricsPath;
    logOptions.onStep = options.onStep;
  }
  StepLog log;
  if (std::string err = log.open(logOptions, first > 0, settings.logEvery);
      !err.empty())
    return fail(err);
  for (int64_t step = first; step < settings.steps; ++step) {
    StepLog::Clock::time_point t0 = StepLog::Clock::now();
    const int64_t t0Ns = whale_rt_now_ns();
    if (std::string err = source->fill(step, global); !err.empty())
      return fail("step " + std::to_string(step + 1) + ": " + err);
    const double factor = settings.lrFactor(step);
    StepOutcome outcome =
        runStep(ranks, global, comm.get(), rankThreads, step, factor);
    whale_rt_comm_trace_driver(comm.get(), "step", t0Ns,
                               whale_rt_now_ns() - t0Ns);
    if (!outcome.error.empty())
      return fail("step " + std::to_string(step + 1) + ": " + outcome.error);
    // The parameters the programs made, against the manifest's list.
    if (step == first)
      for (const OpenedRank &rank : ranks)
        if (std::string err = checkRankParameters(
                rank, m.program(rank.place.stage, rank.place.replica));
            !err.empty())
          return fail(err);
    std::vector<double> &losses = outcome.losses;
    if (options.processes) {
      // Every rank's loss from every process, then summed in the order of
      // one process.
      std::vector<double> own = losses;
      if (std::string err =
              gatherRankLosses(comm.get(), layout, ranks, own, m.grid, losses);
          !err.empty())
        return fail("step " + std::to_string(step + 1) + ": " + err);
    }
    double loss = 0;
    if (std::string err = sumLoss(losses, ranks, step, loss); !err.empty())
      return fail(err);
    result.losses.push_back(loss);
    double evalLoss = std::numeric_limits<double>::quiet_NaN();
    if (settings.evaluatesAfter(step + 1)) {
      if (std::string err = evaluate(evalLoss); !err.empty())
        return fail("step " + std::to_string(step + 1) + ": " + err);
      result.evalLosses.push_back({step + 1, evalLoss});
    }
    if (std::string err =
            log.report(step + 1, settings.steps, loss, m.globalBatch, t0,
                       settings.baseLr * factor, evalLoss);
        !err.empty())
      return fail(err);
    if (!options.savePath.empty() && settings.savesAfter(step + 1))
      if (std::string err = save(step + 1); !err.empty())
        return fail("saving after step " + std::to_string(step + 1) + ": " +
                    err);
  }
  if (!options.savePath.empty())
    if (std::string err = save(settings.steps); !err.empty())
      return fail(err);
  const std::string trace = processTracePath(options.tracePath, processRank);
  if (!trace.empty() &&
      whale_rt_comm_write_trace(comm.get(), trace.c_str()) != WHALE_RT_OK)
    return fail("cannot write the trace to '" + trace + "'");
  result.ok = true;
  return result;
}

} // namespace whale
