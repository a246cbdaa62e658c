//===- RunPlan.cpp - training from a compiled plan ------------------------===//

#include "runtime/exec/RunPlan.h"

#include "runtime/exec/BatchRows.h"
#include "runtime/exec/Checkpoint.h"
#include "runtime/exec/CpuLevels.h"
#include "runtime/exec/DataSource.h"
#include "runtime/exec/Interrupt.h"
#include "runtime/exec/PlanManifest.h"
#include "runtime/exec/Processes.h"
#include "runtime/exec/RankStep.h"
#include "runtime/exec/TrainLoop.h"
#include "runtime/state/PlanState.h"
#include "runtime/state/RankFiles.h"
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

/// A compiled plan's ranks, threads of this process or, under mpirun, of
/// each process its block.
class BundleRun : public TrainLoop {
public:
  using Evaluate = std::function<std::string(double &)>;
  using Save = std::function<std::string(int64_t)>;
  BundleRun(const PlanManifest &m, std::vector<OpenedRank> &ranks,
            whale_rt_comm *comm, const ProcessLayout &layout, bool processes,
            int32_t processRank, RankThreads &threads,
            const std::vector<whale_rt_tensor *> &global,
            Evaluate evaluateOnHost, Save saveOnHost)
      : m(m), ranks(ranks), comm(comm), layout(layout), processes(processes),
        processRank(processRank), threads(threads), global(global),
        evaluateOnHost(std::move(evaluateOnHost)),
        saveOnHost(std::move(saveOnHost)) {}

private:
  StepEnd runStep(int64_t step, double lrFactor, int64_t startNs) override {
    StepOutcome outcome =
        whale::runStep(ranks, global, comm, threads, step, lrFactor);
    whale_rt_comm_trace_driver(comm, "step", startNs,
                               whale_rt_now_ns() - startNs);
    StepEnd end;
    const std::string name = "step " + std::to_string(step + 1);
    if (!outcome.error.empty()) {
      end.error = name + ": " + outcome.error;
      return end;
    }
    // The parameters the programs made, against the manifest's list.
    if (!checked) {
      checked = true;
      for (const OpenedRank &rank : ranks)
        if (std::string err = checkRankParameters(
                rank, m.program(rank.place.stage, rank.place.replica));
            !err.empty()) {
          end.error = err;
          return end;
        }
    }
    std::vector<double> &losses = outcome.losses;
    if (processes) {
      // Every rank's loss from every process, then summed in the order of
      // one process.
      // Whether any process was asked to stop travels with them, so that
      // all stop after the same step and save together.
      std::vector<double> own = losses;
      stopAgreed = interruptRequested();
      if (std::string err = gatherRankLosses(comm, layout, ranks, own, m.grid,
                                             losses, &stopAgreed);
          !err.empty()) {
        end.error = name + ": " + err;
        return end;
      }
    }
    end.error = sumLoss(losses, ranks, step, end.loss);
    return end;
  }
  std::string evaluate(double &loss) override { return evaluateOnHost(loss); }
  std::string save(int64_t nextStep, bool) override {
    return saveOnHost(nextStep);
  }
  bool stopAsked() override {
    return processes ? stopAgreed : interruptRequested();
  }
  bool reports() const override { return processRank <= 0; }
  std::vector<int64_t> replicaRows() const override {
    return dataReplicaRows(m.localBatches, m.rowGroup);
  }

  const PlanManifest &m;
  std::vector<OpenedRank> &ranks;
  whale_rt_comm *comm;
  const ProcessLayout &layout;
  const bool processes;
  const int32_t processRank;
  RankThreads &threads;
  const std::vector<whale_rt_tensor *> &global;
  const Evaluate evaluateOnHost;
  const Save saveOnHost;
  bool checked = false;    ///< the ranks' parameters, after the first step
  bool stopAgreed = false; ///< under mpirun: some process was asked to stop
};

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
  // The state the plan's ranks hold, as boxes (runtime/state/PlanState.h),
  // and this process's ranks: what rank files are written from and read
  // into.
  StateCollection state;
  if (!manifestState(m, state, error))
    return fail(error);
  LocalRanks local;
  local.contextOf = [&](int64_t rank) -> whale_rt_context * {
    for (OpenedRank &r : ranks)
      if (r.place.stage * m.replicas + r.place.replica == rank)
        return r.ctx.get();
    return nullptr; // another process's rank
  };
  if (options.processes) {
    local.processes = &layout;
    local.comm = comm.get();
    local.grid = m.grid;
    for (const OpenedRank &r : ranks)
      local.own.insert(r.place.stage * m.replicas + r.place.replica);
  }
  auto save = [&](int64_t nextStep) -> std::string {
    if (options.saveRanks)
      return saveRankFiles(options.savePath, state, nextStep, settings.seed,
                           local);
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

  // A checkpoint of whale run or whale-exec, of any plan of the model: rank
  // files resharded into this plan's ranks as they load, or a single file
  // read once, each rank handed its part.
  int64_t first = 0;
  if (!options.loadPath.empty() && isRankCheckpoint(options.loadPath)) {
    if (std::string err = loadRankFiles(options.loadPath, state, local, first);
        !err.empty())
      return fail(err);
    if (std::string err =
            checkResumable(options.loadPath, first, settings.steps);
        !err.empty())
      return fail(err);
  } else if (!options.loadPath.empty()) {
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

  BundleRun run(m, ranks, comm.get(), layout, options.processes, processRank,
                rankThreads, global, evaluate, save);
  TrainLoop::Setup setup;
  setup.settings = settings;
  setup.globalBatch = m.globalBatch;
  setup.savePath = options.savePath;
  setup.metricsPath = options.metricsPath;
  setup.samplesPath = options.samplesPath;
  setup.onStep = options.onStep;
  TrainLoop::Outcome outcome = run.run(setup, first, *source, global);
  result.firstStep = outcome.firstStep;
  result.losses = std::move(outcome.losses);
  result.evalLosses = std::move(outcome.evalLosses);
  if (!outcome.ok) {
    result.stopped = outcome.stopped;
    return fail(std::move(outcome.error));
  }
  const std::string trace = processTracePath(options.tracePath, processRank);
  if (!trace.empty() &&
      whale_rt_comm_write_trace(comm.get(), trace.c_str()) != WHALE_RT_OK)
    return fail("cannot write the trace to '" + trace + "'");
  result.ok = true;
  return result;
}

} // namespace whale
