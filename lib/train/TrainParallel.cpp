//===- TrainParallel.cpp - a train block under a plan ---------------------===//
//
// One rank per device of the plan's grid, each a context with its own
// device and a thread that runs its stage's JIT-compiled program every step.
// The driver fills the global batch from the data order, hands each replica
// its rows, and adds the ranks' shares of the loss. When a rank fails, the
// communicator is aborted so the others stop waiting, and the failing
// rank's own message is reported. Under an elastic schedule the job
// pauses at the step boundaries it names, re-plans for the new devices and
// moves its state from the old ranks to the new by a reshard plan
// (lib/elastic/Reshard.h), in memory.
//
//===----------------------------------------------------------------------===//

#include "whale/Train.h"

#include "dialects/Whale/IR/TrainAttrs.h"
#include "lib/compile/Cluster.h"
#include "lib/compile/DataSpec.h"
#include "lib/compile/Jit.h"
#include "lib/compile/LrSchedule.h"
#include "lib/compile/ModelLookup.h"
#include "lib/compile/Planner.h"
#include "lib/compile/StageSignature.h"
#include "lib/elastic/ControlFile.h"
#include "lib/elastic/ProcessCheckpoint.h"
#include "lib/elastic/ProcessReshard.h"
#include "lib/elastic/ProcessStore.h"
#include "lib/elastic/RankCheckpoint.h"
#include "lib/elastic/Reshard.h"
#include "lib/elastic/StateCollection.h"
#include "lib/elastic/StateStore.h"
#include "runtime/WhaleRuntime.h"
#include "runtime/exec/BatchRows.h"
#include "runtime/exec/Checkpoint.h"
#include "runtime/exec/Interrupt.h"
#include "runtime/exec/Processes.h"
#include "runtime/exec/SampleLog.h"
#include "runtime/exec/StepLog.h"
#include "support/InputFile.h"

#include "dialects/Whale/IR/WhaleOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <limits>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

namespace whale {
namespace {

/// Every byte a rank's collectives and sends moved (recvs are the senders').
int64_t bytesMoved(const whale_rt_context *ctx) {
  return whale_rt_comm_bytes(ctx, 0) + whale_rt_comm_bytes(ctx, 1) +
         whale_rt_comm_bytes(ctx, 3) + whale_rt_comm_bytes(ctx, 4) +
         whale_rt_comm_bytes(ctx, 5) + whale_rt_comm_bytes(ctx, 6);
}

using TensorList = std::vector<whale_rt_tensor *>;

/// Seconds a rank waits on another before the run fails naming both.
constexpr double kCommTimeoutSeconds = 120;
/// Tags of the driver's own messages under mpirun, above any a rank
/// program uses (lib/elastic/ProcessReshard.cpp's are at 2^40).
constexpr int64_t kControlTag = int64_t(1) << 42;
// A save's messages (ProcessCheckpoint.h): four tags a step.
constexpr int64_t kSaveTag = int64_t(1) << 43;

/// "" when the devices of `cluster` fit in one process: every device's
/// threads live in it, and past a bound the system would refuse them
/// halfway (after gigabytes of stacks).
std::string checkProcessThreads(const Cluster &cluster, int totalThreads) {
  const int shared = sharedThreads(cluster, totalThreads);
  int64_t processThreads = 0;
  for (const DeviceSpec &d : cluster.devices)
    processThreads += d.kind == "cpu" ? threadsOf(d, shared) : 1;
  if (processThreads <= kMaxProcessThreads)
    return "";
  return "the cluster's devices have " + std::to_string(processThreads) +
         " threads together, more than the " +
         std::to_string(kMaxProcessThreads) +
         " one process runs; give its devices fewer (@threads=)";
}

/// Replaces `plan` by `next`, dropping the old plan's modules before the
/// context that owns them (a member-wise move would drop the context
/// first).
void replacePlan(PlannedModel &plan, PlannedModel &&next) {
  plan.others.clear();
  plan.ranks = mlir::OwningOpRef<mlir::ModuleOp>();
  plan.planned = mlir::OwningOpRef<mlir::ModuleOp>();
  plan = std::move(next);
}

} // namespace

TrainResult trainParallel(Interpreter &interp, const TrainOptions &options) {
  TrainResult result;
  auto fail = [&](std::string msg) {
    result.ok = false;
    result.error = std::move(msg);
    return result;
  };
  // A stop asked by a signal: not ok, but no failure either.
  auto stopAt = [&](std::string msg) {
    result.stopped = true;
    return fail(std::move(msg));
  };
  Cluster cluster;
  std::string error;
  if (!parseCluster(options.cluster, cluster, error) ||
      !checkClusterDevices(cluster, error))
    return fail(error);

  std::function<void(const std::string &)> phase =
      [&](const std::string &what) {
        if (options.onPhase)
          options.onPhase(what);
      };
  // Ranks as processes: this one runs the ranks of its block of devices
  // (runtime/exec/Processes.h), one each when there are as many processes
  // as devices.
  int32_t processRank = -1, processCount = 0;
  ProcessLayout layout;
  // The MPI communicator of the job's processes: the caller's (null: the
  // world), then, after processes are lost, the survivors' own.
  const void *mpiBase = options.mpiCommunicator;
  std::unique_ptr<void, void (*)(void *)> survivorsComm(
      nullptr, whale_rt_mpi_comm_free);
  if (options.processes) {
    char why[512] = "";
    if (whale_rt_mpi_init_on(options.mpiCommunicator, &processRank,
                             &processCount, why, sizeof why) != WHALE_RT_OK)
      return fail(why);
    if (std::string err =
            layoutProcesses(processRank, processCount,
                            static_cast<int64_t>(cluster.devices.size()),
                            layout);
        !err.empty())
      return fail(err + " (the cluster's)");
    // Where the cluster file names its machines, each device's process
    // must run on the host of the device's node.
    if (llvm::any_of(cluster.hosts,
                     [](const std::string &h) { return !h.empty(); })) {
      constexpr int64_t kName = 256;
      std::vector<char> names(static_cast<size_t>(processCount) * kName);
      std::vector<int32_t> cores(static_cast<size_t>(processCount));
      if (whale_rt_mpi_allocation_on(options.mpiCommunicator, names.data(),
                                     kName, cores.data()) != WHALE_RT_OK)
        return fail("the processes could not tell each other their hosts");
      for (size_t d = 0; d < cluster.devices.size(); ++d) {
        int node = cluster.devices[d].node;
        const int32_t p = layout.ownerOf(static_cast<int64_t>(d));
        const std::string &expected = cluster.hosts[node];
        std::string actual = names.data() + p * kName;
        if (!expected.empty() && expected != actual)
          return fail("device " + std::to_string(d) + " is on node " +
                      cluster.nodes[node] + " (host " + expected +
                      "), but process " + std::to_string(p) +
                      ", which runs it, runs on " + actual +
                      ": start the processes in the order of the "
                      "cluster file's devices (one per device or per "
                      "equal block of them, host by host)");
      }
    }
  }

  mlir::func::FuncOp model =
      findModel(interp, options.model, /*needsTrainBlock=*/true, error);
  if (!model)
    return fail(error);
  auto trainBlock = model->getAttrOfType<mlir::DictionaryAttr>("whale.train");
  TrainSettings settings =
      trainSettings(trainBlock, options.steps, options.seed);
  const int64_t steps = settings.steps;
  const uint64_t seed = settings.seed;
  const int stateCount = settings.stateCount;
  if (std::string err = settings.checkLength(static_cast<int64_t>(
          number(trainBlock.getAs<mlir::DictionaryAttr>("data"), "batch", 1)));
      !err.empty())
    return fail(err);

  const int shared = sharedThreads(cluster, options.threads);
  if (std::string err = checkProcessThreads(cluster, options.threads);
      !err.empty())
    return fail(err);
  PlanOptions planOptions;
  planOptions.even = options.evenPlan;
  planOptions.defaultThreads = shared;
  planOptions.fuse = options.fuse;
  planOptions.overlap = options.overlap;
  // Devices the run may move to: a spec read, its devices there, their
  // threads within the bound, the model planned on them, and under mpirun
  // shared out among the same processes. The whole elastic schedule is
  // checked so before the first step, not hours later when a change is
  // due; a control file's request when it comes.
  auto checkDevices = [&](const std::string &spec, Cluster &next,
                          PlannedModel &nextPlan, std::string &why) {
    if (!parseCluster(spec, next, why) || !checkClusterDevices(next, why))
      return false;
    if ((why = checkProcessThreads(next, options.threads)).empty() &&
        planModel(interp, options.model, next, planOptions, nextPlan, why) &&
        options.processes) {
      ProcessLayout shared;
      why = layoutProcesses(processRank, processCount,
                            static_cast<int64_t>(next.devices.size()), shared);
    }
    return why.empty();
  };
  for (const ElasticChange &change : options.elastic) {
    Cluster next;
    PlannedModel trial;
    std::string why;
    const bool ok = checkDevices(change.cluster, next, trial, why);
    replacePlan(trial, PlannedModel());
    if (!ok)
      return fail("the elastic change after step " +
                  std::to_string(change.afterStep) + " to " + change.cluster +
                  " cannot be made: " + why);
  }

  // Each stage's program, its parameters and the shapes of its inputs: one
  // set per module of rank programs (one per micro-batch size).
  struct Stage {
    JitProgram::Entry entry;
    StageProgram program;
  };
  struct Programs {
    mlir::ModuleOp module;
    std::unique_ptr<JitProgram> jit;
    std::vector<Stage> stages;
  };
  using Rank = OpenedRank;
  // What one device set runs with; made anew at each change of devices.
  PlannedModel plan;
  int64_t planVersion = 0; ///< counts the plans the run has had
  std::vector<Programs> programs;
  std::unique_ptr<whale_rt_comm, void (*)(whale_rt_comm *)> comm(
      nullptr, whale_rt_comm_destroy);
  // The trace is written however the run ends (of the last device set,
  // under --elastic).
  using CommPtr = decltype(comm);
  struct TraceWriter {
    CommPtr &of;
    std::string path;
    std::string write() {
      std::string p = std::move(path);
      path.clear();
      if (!p.empty() && of &&
          whale_rt_comm_write_trace(of.get(), p.c_str()) != WHALE_RT_OK)
        return "cannot write the trace to '" + p + "'";
      return "";
    }
    ~TraceWriter() { write(); }
  } traceWriter{comm, processTracePath(options.tracePath, processRank)};
  std::vector<Rank> ranks;
  // Each rank's thread, kept from step to step (rank i on thread i).
  RankThreads rankThreads;
  // Ranks and communicators abandoned when processes were lost: their
  // collectives with the lost processes never finished, and MPI may still
  // write what survivors sent into those collectives' buffers (the ranks'
  // memory, the communicator's scratch), so neither is freed before the
  // run ends; the ranks go before the communicator they were bound to.
  struct Abandoned {
    std::vector<std::vector<Rank>> ranks;
    std::vector<CommPtr> comms;
    ~Abandoned() {
      ranks.clear();
      comms.clear();
    }
  } abandoned;
  std::vector<Parameter> allParams;
  const std::vector<Stage> *stagesOf = nullptr;
  // The program of a rank's stage (replica 0's: every variant names the
  // same parameters).
  const ProgramOf programOf =
      [&](const RankSlot &slot) -> const StageProgram & {
    return (*stagesOf)[slot.stage].program;
  };

  // The global batch, in a context of its own.
  std::unique_ptr<DataSource> source = makeDataSource(model, error);
  if (!source)
    return fail(error);
  ContextPtr host(whale_rt_context_create("host", 1, 0, seed),
                  whale_rt_context_destroy);
  TensorList global;
  for (mlir::Type t : model.getArgumentTypes()) {
    whale_rt_tensor *in =
        newTensor(host.get(), mlir::cast<mlir::RankedTensorType>(t), error);
    if (!in)
      return fail(error);
    global.push_back(in);
  }

  // Takes `next` (the model planned for `cluster`) as the plan and opens
  // its ranks: programs, a communicator, a context per rank.
  auto openRanks = [&](PlannedModel &&next) -> std::string {
    ++planVersion;
    result.stepsOnLastPlan = 0; // the new ranks' counters start at 0
    ranks.clear(); // before the communicator they are bound to
    comm.reset();
    programs.clear();
    replacePlan(plan, std::move(next));
    auto compileRanks = [&](mlir::ModuleOp module) -> std::string {
      Programs p{module, JitProgram::compile(module, error, options.traceSites),
                 {}};
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
    };
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
    const std::vector<int64_t> replicaRows = plan.replicaRows();
    for (int64_t s = 0; s < plan.stages; ++s)
      for (int64_t r = 0; r < plan.replicas; ++r) {
        int64_t device = plan.grid[s * plan.replicas + r];
        if (!layout.owns(device))
          continue; // another process's rank
        const DeviceSpec &spec = cluster.devices[device];
        RankSlot place{s, r, device,
                       firstRowOf(replicaRows, plan.rowGroup, r)};
        const Stage &program = stageOf(s, r);
        Rank rank;
        if (std::string err = openRank(
                runtimeDeviceName(spec, device), threadsOf(spec, shared),
                spec.memory, seed, ampBf16(model), comm.get(), shape, place,
                program.entry, program.program.inputs, rank);
            !err.empty())
          return err;
        ranks.push_back(std::move(rank));
      }
    return "";
  };

  // The context of the plan's rank i (the state collection's rank i): in
  // one process ranks[i]; under mpirun this process's own rank, and null
  // for the ranks of other processes (their processes read and write
  // their state).
  auto contextOf = [&](int64_t i) -> whale_rt_context * {
    if (!options.processes)
      return ranks[i].ctx.get();
    for (Rank &rank : ranks)
      if (rank.place.stage * plan.replicas + rank.place.replica == i)
        return rank.ctx.get();
    return nullptr;
  };
  // The state the ranks hold, by the boxes of the plan's state collection
  // (its rank i is ranks[i]), out of them or into them. The step and the
  // seed are the driver's.
  auto localShape = [](const Box &box) { return box.size; };
  auto splitName = [](const std::string &name, int &state) {
    state = -1;
    size_t at = name.rfind(".optimizer_");
    if (at == std::string::npos)
      return name;
    state = std::atoi(name.c_str() + at + 11);
    return name.substr(0, at);
  };
  auto extractState = [&](const StateCollection &layout, int64_t step,
                          const ReshardPlan &reshard,
                          const StateCollection &next,
                          HeldState &held) -> std::string {
    // Only the boxes some piece reads (of one replica, where the others
    // hold the same).
    std::set<std::tuple<int64_t, std::string, Box>> read;
    for (const ReshardPiece &p : reshard.pieces)
      read.insert({p.from, next.tensors[p.tensor].name, p.held});
    for (const StateTensor &t : layout.tensors) {
      if (t.shape.empty()) { // the step and the seed, as the driver has them
        int64_t value = t.name == "seed" ? static_cast<int64_t>(seed) : step;
        std::vector<uint8_t> bytes(sizeof value);
        std::memcpy(bytes.data(), &value, sizeof value);
        for (const auto &[rank, box] : t.holders)
          if (read.count({rank, t.name, box}))
            held[{rank, t.name}][box] = bytes;
        continue;
      }
      int state = -1;
      std::string name = splitName(t.name, state);
      for (const auto &[rank, box] : t.holders) {
        whale_rt_context *ctx = contextOf(rank);
        if (!ctx || !read.count({rank, t.name, box}))
          continue;
        if (std::string err = readRankTensor(ctx, name, localShape(box), state,
                                             held[{rank, t.name}][box]);
            !err.empty())
          return err;
      }
    }
    return "";
  };
  auto injectState = [&](const HeldState &held) -> std::string {
    for (const auto &[key, boxes] : held) {
      const auto &[rank, tensorName] = key;
      whale_rt_context *ctx = contextOf(rank);
      if (!ctx)
        continue; // another process's rank
      int state = -1;
      std::string name = splitName(tensorName, state);
      for (const auto &[box, bytes] : boxes)
        if (!box.size.empty())
          if (std::string err =
                  writeRankTensor(ctx, name, localShape(box), state, bytes);
              !err.empty())
            return err;
    }
    return "";
  };

  {
    PlannedModel first;
    phase("planning the model over " + std::to_string(cluster.devices.size()) +
          " devices");
    if (!planModel(interp, options.model, cluster, planOptions, first, error))
      return fail(error);
    phase("compiling the rank programs");
    if (std::string err = openRanks(std::move(first)); !err.empty())
      return fail(err);
    phase("");
  }
  if (options.processes) {
    // Every process must run the same job: the rank programs, the steps
    // and the seed, hashed and compared before the first step.
    std::string text;
    llvm::raw_string_ostream os(text);
    plan.ranks->print(os);
    os << "|steps " << steps << "|seed " << seed;
    uint64_t h = llvm::xxh3_64bits(text);
    double mine[2] = {double(h >> 32), double(h & 0xffffffffu)};
    std::vector<double> all;
    if (!gatherFromProcesses(comm.get(), layout, {mine[0], mine[1]}, all))
      return fail("the processes could not compare their plans");
    for (int32_t p = 0; p < processCount; ++p)
      if (all[2 * p] != mine[0] || all[2 * p + 1] != mine[1])
        return fail("process " + std::to_string(p) +
                    " runs another job than process " +
                    std::to_string(processRank) +
                    " (its script, options or cluster differ): every "
                    "process must be started alike");
  }
  // The data of the old ranks the pieces of `reshard` read, from the
  // checkpoint at `path` (whose layout `ckpt` holds already).
  auto readSources = [](const std::string &path, const ReshardPlan &reshard,
                        StateCheckpoint &ckpt) -> std::string {
    std::set<int64_t> sources;
    for (const ReshardPiece &p : reshard.pieces)
      sources.insert(p.from);
    StateCheckpoint part;
    if (std::string err = loadStateCheckpoint(path, part, &sources);
        !err.empty())
      return err;
    if (part.nextStep != ckpt.nextStep || part.model != ckpt.model)
      return path + " changed while it was read";
    ckpt.held = std::move(part.held);
    return "";
  };
  int64_t first = 0;
  if (!options.loadPath.empty() && isRankCheckpoint(options.loadPath)) {
    // One file per rank, of any plan: a reshard from its boxes to ours.
    // The files' headers first, then the data of the old ranks this
    // process's new ranks read from, and no more.
    StateCheckpoint ckpt;
    StateCollection ours;
    ReshardPlan reshard;
    HeldState moved;
    const std::set<int64_t> none;
    if (std::string err = loadStateCheckpoint(options.loadPath, ckpt, &none);
        !err.empty())
      return fail(err);
    if (ckpt.model != plan.model)
      return fail(options.loadPath + " is a checkpoint of '" + ckpt.model +
                  "', not of '" + plan.model + "'");
    if (!stateOf(plan, cluster, ours, error) ||
        !planReshard(ckpt.layout, ours, reshard, error))
      return fail("loading " + options.loadPath + ": " + error);
    if (options.processes)
      keepLocalPieces(layout, plan.grid, ours, reshard);
    if (std::string err = readSources(options.loadPath, reshard, ckpt);
        !err.empty())
      return fail(err);
    if (!applyReshard(ours, reshard, ckpt.held, moved, error))
      return fail("loading " + options.loadPath + ": " + error);
    if (std::string err = injectState(moved); !err.empty())
      return fail(err);
    first = ckpt.nextStep;
  } else if (!options.loadPath.empty()) {
    // Load once, then hand each rank its stage's part.
    if (std::string err =
            loadCheckpoint(host.get(), options.loadPath, plan.model, allParams,
                           stateCount, first);
        !err.empty())
      return fail(err);
    if (std::string err = copyRanksState(host.get(), ranks, programOf,
                                         stateCount, /*toRanks=*/true);
        !err.empty())
      return fail(err);
  }
  if (!options.loadPath.empty())
    if (std::string err = checkResumable(options.loadPath, first, steps);
        !err.empty())
      return fail(err);
  // A failure asked for by a test must be one that can happen: a silent
  // no-op would pass a recovery test that tested nothing.
  if (options.failStep > 0 &&
      (options.failDevice < 0 ||
       options.failDevice >= static_cast<int64_t>(cluster.devices.size()) ||
       options.failStep <= first || options.failStep > steps))
    return fail("--fail-rank " + std::to_string(options.failDevice) + "@" +
                std::to_string(options.failStep) +
                ": expected a device from 0 to " +
                std::to_string(cluster.devices.size() - 1) +
                " and a step this run trains, from " +
                std::to_string(first + 1) + " to " + std::to_string(steps));
  // The changes of devices still to come, checked against the steps.
  size_t nextChange = 0;
  for (size_t i = 0; i < options.elastic.size(); ++i) {
    int64_t at = options.elastic[i].afterStep;
    if (at <= first || at >= steps ||
        (i && at <= options.elastic[i - 1].afterStep))
      return fail("elastic change " + std::to_string(i + 1) +
                  " comes after step " + std::to_string(at) +
                  ": the changes come after steps in increasing order, "
                  "between step " +
                  std::to_string(first + 1) + " and step " +
                  std::to_string(steps - 1));
  }

  // The in-memory store (replicateEvery), lib/elastic/StateStore.h.
  StateStore store;
  auto updateStore = [&](int64_t step) -> std::string {
    auto t0 = std::chrono::steady_clock::now();
    StateCollection collection;
    ReshardPlan own;
    if (!stateOf(plan, cluster, collection, error) ||
        !planReshard(collection, collection, own, error))
      return error;
    const bool acrossProcesses = options.processes && layout.processes > 1;
    HeldState &mine = acrossProcesses
                          ? store.pendingOwn(collection, planVersion)
                          : store.prepare(collection, planVersion);
    if (std::string err =
            extractState(collection, step, own, collection, mine);
        !err.empty()) {
      if (acrossProcesses)
        store.dropPending();
      else
        store.invalidate();
      return err;
    }
    if (acrossProcesses) {
      // The copy goes to the next process: a process's death takes all
      // of its ranks (lib/elastic/ProcessStore.h). Until both directions are
      // whole, the previous update stays the latest: a process that dies
      // in the middle leaves every survivor an update it can go back to.
      int64_t sent = 0;
      if (std::string err = exchangeStoreCopies(comm.get(), layout, mine,
                                                store.pendingCopy(), sent);
          !err.empty()) {
        store.dropPending();
        return err;
      }
      result.storeSentBytes += sent;
      store.commitPending(step);
    } else {
      store.commit(step);
    }
    ++result.storeUpdates;
    result.storeSeconds += std::chrono::duration<double>(
                               std::chrono::steady_clock::now() - t0)
                               .count();
    return "";
  };
  // The step of the last checkpoint this run saved (save_every), the
  // fallback when no copy in memory survives a failure; -1 before any.
  int64_t lastSaved = -1;
  // Where no copy in memory serves (`why`): the state of this run's last
  // checkpoint (every rank's boxes), or why there is none.
  auto lastCheckpoint = [&](const std::string &why, StateCollection &layout,
                            HeldState &held, RecoveryReport &report,
                            const std::set<int64_t> *only =
                                nullptr) -> std::string {
    if (lastSaved < 0)
      return why + ", and this run has saved no checkpoint (save_every with "
                   "--save)";
    StateCheckpoint saved;
    if (std::string err = loadStateCheckpoint(options.savePath, saved, only);
        !err.empty())
      return why + ", and the checkpoint cannot be read: " + err;
    layout = std::move(saved.layout);
    held = std::move(saved.held);
    report.source = "checkpoint " + options.savePath;
    report.resumedAfter = saved.nextStep;
    return "";
  };
  // After the rank on device `lost` failed: the store's state without
  // that worker (its boxes from the next worker's copy and from its
  // data-parallel replicas), or else this run's last checkpoint, on the
  // survivors, re-planned.
  auto recover = [&](int64_t lost, RecoveryReport &report) -> std::string {
    auto t0 = std::chrono::steady_clock::now();
    int64_t lostRank = -1;
    for (int64_t i = 0; i < static_cast<int64_t>(ranks.size()); ++i)
      if (ranks[i].place.device == lost)
        lostRank = i;
    StateCollection surviving;
    HeldState held;
    // The newer of the two; memory when they are of one step.
    std::string inMemory =
        store.step() < 0 ? "no copy of the state is kept in memory "
                           "(--replicate-every)"
        : store.step() < lastSaved
            ? "the copy in memory is older than the last checkpoint"
            : "";
    if (inMemory.empty() && store.surviving(lostRank, surviving, held, error)) {
      report.source = "memory";
      report.resumedAfter = store.step();
    } else {
      if (inMemory.empty())
        inMemory = error;
      if (std::string err = lastCheckpoint(inMemory, surviving, held, report);
          !err.empty())
        return err;
    }
    // The survivors, as many as the model plans on (from the end, the
    // fewest dropped).
    Cluster survivors = cluster;
    survivors.devices.erase(survivors.devices.begin() + lost);
    PlannedModel next;
    std::string why;
    while (!survivors.devices.empty() &&
           !planModel(interp, options.model, survivors, planOptions, next,
                      why)) {
      survivors.devices.pop_back();
      replacePlan(next, PlannedModel());
    }
    if (survivors.devices.empty())
      return "the model plans on none of the remaining devices: " + why;
    StateCollection after;
    ReshardPlan reshard;
    HeldState moved;
    if (!stateOf(next, survivors, after, error) ||
        !planReshard(surviving, after, reshard, error))
      return error;
    report.devicesBefore = static_cast<int64_t>(cluster.devices.size());
    cluster = survivors;
    if (std::string err = openRanks(std::move(next)); !err.empty())
      return err;
    if (!applyReshard(after, reshard, held, moved, error))
      return error;
    if (std::string err = injectState(moved); !err.empty())
      return err;
    report.devicesAfter = static_cast<int64_t>(cluster.devices.size());
    report.movedBytes = reshard.movedBytes();
    report.seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - t0)
                         .count();
    return "";
  };

  // Under mpirun, after processes died (their peers' connections tell,
  // runtime/comm/PeerWatch.h): the survivors make a communicator of their
  // own (MPI's world is not theirs any more), plan for their devices, and
  // rebuild the state from the store (a lost process's boxes are with the
  // process after it, lib/elastic/ProcessStore.h), or else from the last
  // checkpoint; then they go on from that state's step.
  auto recoverProcesses = [&](RecoveryReport &report) -> std::string {
    auto t0 = std::chrono::steady_clock::now();
    // A moment for deaths that came together to be all known.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::vector<int32_t> dead(static_cast<size_t>(processCount));
    const int32_t deaths = whale_rt_comm_lost_processes(
        comm.get(), dead.data(), processCount);
    dead.resize(static_cast<size_t>(std::min(deaths, processCount)));
    const ProcessLayout oldLayout = layout;
    const std::vector<int64_t> oldGrid = plan.grid;
    const ProcessLoss loss(dead, oldLayout, oldGrid);
    if (static_cast<int32_t>(loss.lost.size()) >= processCount)
      return "no process is left";
    // The store's updates held here, where they cover what was lost; the
    // survivors agree on one below.
    HeldState held;
    StateCollection before;
    std::vector<int64_t> stepsHere = store.stepsHeld();
    std::string inMemory = stepsHere[0] < 0
                               ? "no copy of the state is kept in memory "
                                 "(--replicate-every)"
                               : loss.uncovered(processCount);
    if (!inMemory.empty())
      stepsHere = {-1, -1};

    // The survivors' communicator, numbers and devices: each keeps its
    // own, in order, so that process q runs the q-th block of them.
    void *survivors = nullptr;
    char why[512] = "";
    if (whale_rt_mpi_survivors(mpiBase, dead.data(),
                               static_cast<int32_t>(dead.size()), &survivors,
                               why, sizeof why) != WHALE_RT_OK)
      return why;
    std::unique_ptr<void, void (*)(void *)> previousComm(
        survivorsComm.release(), whale_rt_mpi_comm_free);
    survivorsComm.reset(survivors);
    mpiBase = survivors;
    if (whale_rt_mpi_init_on(mpiBase, &processRank, &processCount, why,
                             sizeof why) != WHALE_RT_OK)
      return why;
    // Every survivor keeps its devices, or, where the model does not plan
    // on them all, the same fewer of them each (its first ones).
    Cluster remaining = cluster;
    PlannedModel next;
    std::string planError;
    int64_t keep = oldLayout.perProcess;
    for (; keep > 0; --keep) {
      remaining.devices.clear();
      for (size_t d = 0; d < cluster.devices.size(); ++d) {
        const int64_t device = static_cast<int64_t>(d);
        if (!loss.lost.count(oldLayout.ownerOf(device)) &&
            device % oldLayout.perProcess < keep)
          remaining.devices.push_back(cluster.devices[d]);
      }
      if (planModel(interp, options.model, remaining, planOptions, next,
                    error))
        break;
      if (planError.empty())
        planError = error;
      replacePlan(next, PlannedModel());
    }
    if (!next.ranks)
      return "the model plans on none of the survivors' devices (" +
             std::to_string(processCount) + " processes, the same number "
             "each): " + planError;
    if (std::string err = layoutProcesses(
            processRank, processCount,
            static_cast<int64_t>(remaining.devices.size()), layout);
        !err.empty())
      return err;
    report.devicesBefore = static_cast<int64_t>(cluster.devices.size());
    report.processesLost = static_cast<int64_t>(loss.lost.size());
    cluster = remaining;
    abandoned.ranks.push_back(std::move(ranks));
    ranks.clear();
    abandoned.comms.push_back(std::move(comm));
    if (std::string err = openRanks(std::move(next)); !err.empty())
      return err;
    previousComm.reset(); // after the communicator made over it

    // Memory only when every survivor has its part of it, of one step: the
    // newest update all of them hold whole (one may have finished an
    // update that another did not when the process died).
    std::vector<double> steps;
    if (!gatherFromProcesses(comm.get(), layout,
                             {double(stepsHere[0]), double(stepsHere[1])},
                             steps))
      return "the survivors could not compare their copies of the state";
    int64_t fromMemory = -1;
    for (int64_t candidate : stepsHere) {
      bool everywhere = candidate >= 0 && candidate >= lastSaved;
      for (size_t p = 0; everywhere && p < steps.size(); p += 2)
        everywhere = steps[p] == double(candidate) ||
                     steps[p + 1] == double(candidate);
      if (everywhere) {
        fromMemory = candidate;
        break;
      }
    }
    if (fromMemory < 0 && inMemory.empty())
      inMemory = stepsHere[0] >= 0 && stepsHere[0] < lastSaved
                     ? "the copy in memory is older than the last checkpoint"
                     : "the survivors hold no update of the state in common";
    // Every survivor takes the same answer from the same numbers; one whose
    // copy is damaged makes all fall back.
    std::string taken;
    if (fromMemory >= 0 &&
        !store.takeSurviving(loss.lostRanks, fromMemory, before, held, taken))
      held.clear();
    std::vector<double> takenEverywhere;
    if (!gatherFromProcesses(comm.get(), layout, {taken.empty() ? 1.0 : 0.0},
                             takenEverywhere))
      return "the survivors could not compare their copies of the state";
    for (double ok : takenEverywhere)
      if (ok != 1.0 && fromMemory >= 0) {
        fromMemory = -1;
        inMemory = taken.empty() ? "another survivor's copy of the state is "
                                   "not usable"
                                 : taken;
      }
    if (fromMemory >= 0) {
      report.source = "memory";
      report.resumedAfter = fromMemory;
    } else {
      if (inMemory.empty())
        inMemory = "another process's copy of the state is not usable";
      // Its layout here; the data this process needs once planned.
      const std::set<int64_t> none;
      if (std::string err =
              lastCheckpoint(inMemory, before, held, report, &none);
          !err.empty())
        return err;
    }
    if (fromMemory >= 0) {
      // Each old rank's boxes are where its holder runs now: a survivor's
      // own on its device (by its new name), a lost one's with its keeper
      // (on the keeper's first device), so that the plan moves what truly
      // moves.
      const std::vector<RankPlace> places = devicePlaces(cluster);
      for (size_t r = 0; r < before.ranks.size() && r < oldGrid.size(); ++r) {
        const int64_t device = oldGrid[r];
        const int32_t owner = oldLayout.ownerOf(device);
        const int64_t slot = device % oldLayout.perProcess;
        const int64_t now =
            !loss.lost.count(owner) && slot < keep
                ? loss.renumbered[static_cast<size_t>(owner)] * keep + slot
                : loss.holderOf(static_cast<int64_t>(r), oldLayout, oldGrid) *
                      keep;
        before.ranks[r] = places[static_cast<size_t>(now)];
      }
    }
    StateCollection after;
    ReshardPlan reshard;
    HeldState moved;
    if (!stateOf(plan, cluster, after, error) ||
        !planReshard(before, after, reshard, error))
      return error;
    report.movedBytes = reshard.movedBytes();
    // From memory the boxes are spread over the survivors and cross
    // between them; from a checkpoint each survivor reads, once planned,
    // the files of the old ranks its own new ranks read from.
    if (fromMemory >= 0)
      if (std::string err = exchangePiecesBetween(
              comm.get(), layout.process, layout.perProcess,
              [&](int64_t rank) {
                return loss.holderOf(rank, oldLayout, oldGrid);
              },
              [&](int64_t rank) {
                return layout.ownerOf(plan.grid[static_cast<size_t>(rank)]);
              },
              after, reshard, held, report.processBytes);
          !err.empty())
        return err;
    keepLocalPieces(layout, plan.grid, after, reshard);
    if (fromMemory < 0) {
      StateCheckpoint sources;
      sources.model = plan.model;
      sources.nextStep = report.resumedAfter;
      if (std::string err = readSources(options.savePath, reshard, sources);
          !err.empty())
        return err;
      held = std::move(sources.held);
    }
    if (!applyReshard(after, reshard, held, moved, error))
      return error;
    if (std::string err = injectState(moved); !err.empty())
      return err;
    report.devicesAfter = static_cast<int64_t>(cluster.devices.size());
    report.seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - t0)
                         .count();
    return "";
  };

  StepLog log;
  // Rank 0's process writes the metrics.
  if (std::string err =
          log.open(processRank > 0 ? std::string() : options.metricsPath,
                   options.onStep, first > 0, settings.logEvery);
      !err.empty())
    return fail(err);
  SampleLog sampleLog;
  if (std::string err = sampleLog.open(
          processRank > 0 ? std::string() : options.samplesPath, first > 0);
      !err.empty())
    return fail(err);
  result.firstStep = first + 1;
  // --fail-rank's failure happens once a job: after a recovery it is never
  // injected again (a process that was still finishing an earlier step when
  // another died never reached the injection, and must not inject it when
  // the survivors run that step again).
  bool injected = false;
  // Under mpirun, a failure `failure` during `step` (0-based): when it came
  // from processes lost and a state to resume from exists, the recovery,
  // "" and `step` set so that the loop runs the first step after that
  // state next; else what to report.
  auto recoverFromLoss = [&](int64_t &step,
                             const std::string &failure) -> std::string {
    if (whale_rt_comm_lost_processes(comm.get(), nullptr, 0) == 0 ||
        (store.step() < 0 && lastSaved < 0))
      return failure;
    RecoveryReport report;
    report.failedStep = step + 1;
    report.failure = failure;
    const bool reported = processRank <= 0;
    if (std::string err = recoverProcesses(report); !err.empty())
      return failure + "; recovering failed: " + err;
    // Process 0 may have been lost: its successor reports from now on.
    if (processRank == 0 && !reported) {
      if (std::string err = log.open(options.metricsPath, options.onStep, true,
                                     settings.logEvery);
          !err.empty())
        return err;
      if (std::string err = sampleLog.open(options.samplesPath, true);
          !err.empty())
        return err;
    }
    result.recoveries.push_back(report);
    injected = true;
    result.losses.resize(report.resumedAfter - first);
    step = report.resumedAfter - 1; // the loop's ++ makes it that step
    return "";
  };
  // Under mpirun every process gets the whole state (each part from the
  // process holding it): each evaluates alike, and process 0 saves.
  auto gatherToHost = [&]() {
    return gatherStateOnHosts(comm.get(), layout, host.get(), ranks, programOf,
                              stateCount, plan.stages, plan.replicas,
                              plan.grid);
  };
  // Held-out evaluation (eval_every): the parameters gathered on the host,
  // the model's forward pass there, one device, at the global batch.
  std::unique_ptr<DataSource> evalSource;
  std::unique_ptr<JitProgram> evalProgram;
  JitProgram::Entry evalForward = nullptr;
  if (settings.evalEvery > 0) {
    if (!(evalSource = makeDataSource(model, error, "eval_data")))
      return fail(error);
    mlir::OwningOpRef<mlir::ModuleOp> forward = hostForward(interp);
    if (!forward || !(evalProgram = JitProgram::compile(*forward, error)) ||
        !(evalForward = evalProgram->lookup(plan.model)))
      return fail("compiling the held-out evaluation failed: " + error);
    if (ampBf16(model))
      whale_rt_set_amp(host.get(), WHALE_RT_AMP_BF16);
  }
  auto evaluate = [&](double &loss) -> std::string {
    if (std::string err = gatherToHost(); !err.empty())
      return err;
    return evaluateOnHost(host.get(), evalForward, *evalSource, global,
                          settings.evalSteps, loss);
  };

  // The state after `nextStep` steps into the save path: each rank's own
  // boxes (--save-ranks), or gathered whole into one file; the host holds
  // the gathered parameters afterwards when `gatherAnyway`.
  auto saveState = [&](int64_t nextStep, bool gatherAnyway) -> std::string {
    if (!options.savePath.empty())
      phase("saving the checkpoint to " + options.savePath);
    struct Done {
      std::function<void(const std::string &)> &report;
      ~Done() { report(""); }
    } done{phase};
    if (!options.savePath.empty() && options.saveRanks) {
      StateCheckpoint ckpt;
      ReshardPlan own;
      ckpt.model = plan.model;
      ckpt.nextStep = nextStep;
      ckpt.seed = seed;
      std::string why;
      if (!stateOf(plan, cluster, ckpt.layout, why) ||
          !planReshard(ckpt.layout, ckpt.layout, own, why))
        return why;
      if (std::string err =
              extractState(ckpt.layout, nextStep, own, ckpt.layout, ckpt.held);
          !err.empty())
        return err;
      // Under mpirun each process writes its own ranks' files: the state
      // never passes through one process.
      if (options.processes) {
        std::set<int64_t> own;
        for (const Rank &rank : ranks)
          own.insert(rank.place.stage * plan.replicas + rank.place.replica);
        if (std::string err = saveRankCheckpointOnProcesses(
                comm.get(), layout, kSaveTag + 4 * nextStep, options.savePath,
                ckpt, own);
            !err.empty())
          return err;
      } else if (std::string err = saveRankCheckpoint(options.savePath, ckpt);
                 !err.empty()) {
        return err;
      }
    }
    const bool wholeSave = !options.savePath.empty() && !options.saveRanks;
    if (!wholeSave && !gatherAnyway)
      return "";
    if (std::string err = gatherToHost(); !err.empty())
      return err;
    if (!wholeSave || processRank > 0)
      return "";
    return saveCheckpoint(host.get(), options.savePath, plan.model, nextStep,
                          seed, allParams, stateCount);
  };

  // The control file at a step boundary: whether it asks for a change,
  // read (and removed) by this process, or under mpirun by process 0 and
  // told to the others, so that all change alike.
  // A stop asked by a signal. Under mpirun every process learns whether
  // any was asked with the step's losses (gatherRankLosses), so that all
  // stop after the same step and save together; no message of its own.
  bool stopAgreed = false;
  auto stopAsked = [&] {
    return options.processes ? stopAgreed : interruptRequested();
  };
  ControlFile control(options.controlPath);
  auto readControl = [&](int64_t step, std::string &spec,
                         std::string &why) -> bool {
    std::string told = "0";
    if (processRank <= 0)
      switch (control.poll(spec, why)) {
      case ControlFile::Read::Nothing:
        break;
      case ControlFile::Read::Request:
        told = "1" + spec;
        break;
      case ControlFile::Read::Refused:
        told = "2" + why;
        break;
      }
    if (options.processes &&
        !shareFromProcessZero(comm.get(), layout,
                              kControlTag + 2 * static_cast<int64_t>(step),
                              told)) {
      why = "the processes could not share the control file";
      return true;
    }
    if (told.empty() || told[0] == '0')
      return false;
    (told[0] == '1' ? spec : why) = told.substr(1);
    return true;
  };
  for (int64_t step = first; step < steps; ++step) {
    if (stopAsked()) {
      // The steps done since the last save are kept where --save was
      // given: a scheduler's SIGTERM loses nothing finished.
      if (options.savePath.empty() || step == first || step == lastSaved)
        return stopAt(interruptedAfter(
            step, step == lastSaved && step > first ? options.savePath : ""));
      if (std::string err = saveState(step, /*gatherAnyway=*/false);
          !err.empty())
        return fail(interruptedAfter(step) + "; saving failed: " + err);
      return stopAt(interruptedAfter(step, options.savePath));
    }
    // A change asked for by hand, checked before anything is stopped: a
    // spec the model cannot be planned on is reported and the job goes on.
    std::optional<ElasticChange> byHand;
    std::string spec, why;
    if (step > first && !options.controlPath.empty() &&
        readControl(step, spec, why)) {
      Cluster asked;
      PlannedModel trial;
      if (!why.empty())
        result.controlErrors.push_back("after step " + std::to_string(step) +
                                       ": " + why);
      else if (!spec.empty() && !checkDevices(spec, asked, trial, why))
        result.controlErrors.push_back("after step " + std::to_string(step) +
                                       ", " + spec + ": " + why);
      else if (!spec.empty())
        byHand = ElasticChange{step, spec};
      replacePlan(trial, PlannedModel());
    }
    if (byHand || (nextChange < options.elastic.size() &&
                   options.elastic[nextChange].afterStep == step)) {
      // Pause at this step boundary: a plan for the new devices, the
      // reshard plan from the old ranks' boxes to the new ones', the boxes
      // it reads out of the old ranks, the new ranks, the state into them.
      const ElasticChange change =
          byHand ? *byHand : options.elastic[nextChange++];
      auto t0 = std::chrono::steady_clock::now();
      StateCollection before, after;
      HeldState held, moved;
      ReshardPlan reshard;
      Cluster next;
      PlannedModel nextPlan;
      ReshardReport report;
      report.afterStep = step;
      report.ranksBefore = static_cast<int64_t>(ranks.size());
      auto why = [&](const std::string &what) {
        return fail(what + " after step " + std::to_string(step) + ": " +
                    error);
      };
      if (!parseCluster(change.cluster, next, error) ||
          !checkClusterDevices(next, error))
        return why("changing the devices to " + change.cluster);
      if (!planModel(interp, options.model, next, planOptions, nextPlan,
                     error))
        return why("re-planning for " + change.cluster);
      // Under mpirun the same processes run the new devices, each its
      // block of them.
      ProcessLayout nextLayout;
      if (options.processes)
        if (std::string err = layoutProcesses(
                processRank, processCount,
                static_cast<int64_t>(next.devices.size()), nextLayout);
            !err.empty()) {
          error = err + " (the new cluster's)";
          return why("changing the devices to " + change.cluster);
        }
      auto since = [](std::chrono::steady_clock::time_point t) {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                             t)
            .count();
      };
      report.planSeconds = since(t0);
      if (!stateOf(plan, cluster, before, error) ||
          !stateOf(nextPlan, next, after, error) ||
          !planReshard(before, after, reshard, error))
        return why("resharding");
      // On CPU devices both plans' tensors are host memory: each piece is
      // copied straight from the old rank's tensor into the new rank's,
      // with the old ranks kept open until then. Elsewhere the pieces the
      // plan reads go through host copies.
      auto onHost = [](const Cluster &c) {
        return std::all_of(c.devices.begin(), c.devices.end(),
                           [](const DeviceSpec &d) { return d.kind == "cpu"; });
      };
      // Under mpirun the pieces cross processes: through host copies, sent
      // over the old plan's communicator (lib/elastic/ProcessReshard.h).
      const bool direct =
          onHost(cluster) && onHost(next) && !options.processes;
      std::vector<Rank> oldRanks;
      auto oldComm = std::move(comm);
      if (direct) {
        oldRanks = std::move(ranks);
        ranks.clear();
      } else if (std::string err =
                     extractState(before, step, reshard, after, held);
                 !err.empty()) {
        return fail(err);
      }
      if (options.processes) {
        if (std::string err =
                exchangePieces(oldComm.get(), layout, nextLayout, plan.grid,
                               nextPlan.grid, after, reshard, held,
                               report.processBytes);
            !err.empty())
          return fail(err + " after step " + std::to_string(step));
        keepLocalPieces(nextLayout, nextPlan.grid, after, reshard);
        // The old ranks go before the new communicator binds: both are
        // MPI's, one at a time.
        ranks.clear();
        layout = nextLayout;
      }
      cluster = next;
      auto opening = std::chrono::steady_clock::now();
      if (std::string err = openRanks(std::move(nextPlan)); !err.empty())
        return fail("opening the ranks for " + change.cluster +
                    " after step " + std::to_string(step) + ": " + err);
      report.planSeconds += since(opening);
      if (direct) {
        for (const ReshardPiece &p : reshard.pieces) {
          const StateTensor &t = after.tensors[p.tensor];
          if (t.shape.empty())
            continue; // the step and the seed are the driver's
          int state = -1;
          std::string name = splitName(t.name, state);
          whale_rt_context *from = oldRanks[p.from].ctx.get(),
                           *to = ranks[p.to].ctx.get();
          whale_rt_tensor *src = rankTensor(from, name, p.held.size, state),
                          *dst = rankTensor(to, name, p.needed.size, state);
          if (!src || !dst)
            return fail(whale_rt_last_error(src ? to : from));
          copyBox(static_cast<const uint8_t *>(whale_rt_tensor_data(src)),
                  p.held, static_cast<uint8_t *>(whale_rt_tensor_data(dst)),
                  p.needed, p.box, t.elementBytes);
        }
      } else {
        if (!applyReshard(after, reshard, held, moved, error))
          return why("resharding");
        if (std::string err = injectState(moved); !err.empty())
          return fail(err);
      }
      oldRanks.clear(); // before the communicator they were bound to
      oldComm.reset();
      report.ranksAfter = static_cast<int64_t>(ranks.size());
      if (options.processes) {
        // Every process's ranks, and the plan's bytes (this process kept
        // only its own pieces).
        report.ranksBefore = static_cast<int64_t>(before.ranks.size());
        report.ranksAfter = static_cast<int64_t>(after.ranks.size());
      }
      report.movedBytes = reshard.movedBytes();
      report.lowerBoundBytes = reshard.lowerBoundBytes;
      report.stayedBytes = reshard.stayBytes;
      report.seconds = since(t0);
      result.reshards.push_back(report);
    }
    StepLog::Clock::time_point t0 = StepLog::Clock::now();
    const int64_t t0Ns = whale_rt_now_ns();
    if (std::string err = source->fill(step, global); !err.empty())
      return fail("step " + std::to_string(step + 1) + ": " + err);
    if (!options.samplesPath.empty() && processRank <= 0) {
      // Data replica r computes rows [sum of the shares before it, + its
      // own): a shard group sharing its rows is one.
      if (std::string err = sampleLog.write(
              step + 1, source->samples(step),
              dataReplicaRows(plan.replicaRows(), plan.rowGroup));
          !err.empty())
        return fail(err);
    }
    double factor = settings.lrFactor(step);
    const bool inject = !injected && options.failStep == step + 1;
    injected = injected || inject;
    InjectedFailure failure;
    if (inject)
      failure = {options.failDevice, step + 1, options.processes};
    StepOutcome outcome =
        runStep(ranks, global, comm.get(), rankThreads, step, factor, failure);
    std::vector<double> &losses = outcome.losses;
    const std::string &firstError = outcome.error;
    const int64_t failedDevice = outcome.failedDevice;
    whale_rt_comm_trace_driver(
        comm.get(), "step", t0Ns, whale_rt_now_ns() - t0Ns);
    if (!firstError.empty() && failedDevice >= 0 && !options.processes &&
        (store.step() >= 0 || lastSaved >= 0)) {
      // Recover from the store (or the last checkpoint): the survivors
      // re-planned, the steps since that state run again.
      RecoveryReport report;
      report.failedStep = step + 1;
      report.failure = firstError;
      if (std::string err = recover(failedDevice, report); !err.empty())
        return fail("step " + std::to_string(step + 1) + ": " + firstError +
                    "; recovering failed: " + err);
      result.recoveries.push_back(report);
      result.losses.resize(report.resumedAfter - first);
      step = report.resumedAfter - 1; // the loop's ++ makes it that step
      continue;
    }
    // Under mpirun a rank that failed ends here, unless processes were
    // lost and the survivors recover; else its process ends the world
    // (the CLI calls MPI_Abort), so no other waits on it.
    if (options.processes && !firstError.empty()) {
      if (std::string err = recoverFromLoss(step, firstError); !err.empty())
        return fail("step " + std::to_string(step + 1) + ": " + err);
      continue;
    }
    if (options.processes) {
      // Every rank's loss, from every process; the sum below then runs
      // over them in the same order as in one process.
      std::vector<double> own = losses;
      stopAgreed = interruptRequested();
      if (std::string err = gatherRankLosses(comm.get(), layout, ranks, own,
                                             plan.grid, losses, &stopAgreed);
          !err.empty()) {
        if (std::string why = recoverFromLoss(step, err); !why.empty())
          return fail("step " + std::to_string(step + 1) + ": " + why);
        continue;
      }
    }
    if (!firstError.empty())
      return fail("step " + std::to_string(step + 1) + ": " + firstError);
    double value = 0;
    if (std::string err = sumLoss(losses, ranks, step, value); !err.empty())
      return fail(err);
    result.losses.push_back(value);
    ++result.stepsOnLastPlan;
    double evalLoss = std::numeric_limits<double>::quiet_NaN();
    if (settings.evaluatesAfter(step + 1)) {
      if (std::string err = evaluate(evalLoss); !err.empty())
        return fail("step " + std::to_string(step + 1) + ": " + err);
      result.evalLosses.push_back({step + 1, evalLoss});
    }
    // Under mpirun one process (rank 0) reports and writes the metrics.
    if (processRank <= 0)
      if (std::string err = log.report(step + 1, steps, value, plan.globalBatch,
                                       t0, settings.baseLr * factor, evalLoss);
          !err.empty())
        return fail(err);
    if (settings.savesAfter(step + 1) && !options.savePath.empty()) {
      if (std::string err = saveState(step + 1, /*gatherAnyway=*/false);
          !err.empty())
        return fail("saving after step " + std::to_string(step + 1) + ": " +
                    err);
      lastSaved = step + 1;
    }
    // The store after every replicateEvery-th step (none before the first:
    // the parameters are made by the first step's programs).
    if (options.replicateEvery > 0 &&
        (step + 1 - first) % options.replicateEvery == 0 && step + 1 < steps)
      if (std::string err = updateStore(step + 1); !err.empty()) {
        ++step; // the failure is after it, not during it
        if (std::string why = recoverFromLoss(step, err); !why.empty())
          return fail("keeping the state in memory after step " +
                      std::to_string(step) + ": " + why);
      }
  }
  const int64_t devices = static_cast<int64_t>(cluster.devices.size());
  if (std::string err = saveState(steps, /*gatherAnyway=*/
                                  options.keepParameters);
      !err.empty())
    return fail(err);
  if (options.keepParameters)
    if (std::string err =
            readParameters(host.get(), allParams, result.parameters);
        !err.empty())
      return fail(err);
  result.peakMemory.assign(devices, 0);
  result.localBatches.assign(devices, 0);
  const std::vector<int64_t> replicaRows = plan.replicaRows();
  for (const Rank &rank : ranks) {
    int64_t device = rank.place.device;
    result.peakMemory[device] = whale_rt_memory_peak(rank.ctx.get());
    result.localBatches[device] = replicaRows[rank.place.replica];
  }
  for (const Rank &rank : ranks) {
    result.commBytes.push_back(bytesMoved(rank.ctx.get()));
    result.allToAllBytes.push_back(whale_rt_comm_bytes(rank.ctx.get(), 4));
  }
  if (options.processes && !ranks.empty()) {
    // Each process knows its own ranks' figures: every process gets all
    // (peak memory, rows, bytes moved, of which all-to-all).
    constexpr int kFigures = 4;
    std::vector<double> all;
    if (!gatherDeviceFigures(
            comm.get(), layout, ranks, kFigures,
            [&](const Rank &rank, double *out) {
              const int64_t device = rank.place.device;
              out[0] = double(result.peakMemory[device]);
              out[1] = double(result.localBatches[device]);
              out[2] = double(bytesMoved(rank.ctx.get()));
              out[3] = double(whale_rt_comm_bytes(rank.ctx.get(), 4));
            },
            all))
      return fail("the processes could not exchange their figures");
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
  }
  if (std::string err = traceWriter.write(); !err.empty())
    return fail(err);
  store.wait();
  result.storeCopySeconds = store.copiedSeconds();
  result.processRank = processRank;
  result.ok = true;
  return result;
}

} // namespace whale
