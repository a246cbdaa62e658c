//===- RankStep.cpp - a plan's ranks, each a thread, one step at a time ---===//

#include "runtime/run/RankStep.h"

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/core/CpuPlacement.h"
#include "runtime/run/StepLog.h"

#include <algorithm>
#include <csignal>
#include <map>
#include <mutex>
#include <numeric>

namespace whale {
namespace {

/// Rows [first, first + count) of `from` (batch-major, on the host) into
/// `to`, on its rank's device (a GPU's too).
whale_rt_status copyRows(whale_rt_tensor *from, whale_rt_context *toCtx,
                         whale_rt_tensor *to, int64_t first) {
  int64_t rowBytes = 4;
  const int64_t *shape = whale_rt_tensor_shape(to);
  for (int32_t d = 1; d < whale_rt_tensor_rank(to); ++d)
    rowBytes *= shape[d];
  return whale_rt_tensor_write(toCtx, to,
                               static_cast<char *>(whale_rt_tensor_data(from)) +
                                   first * rowBytes,
                               shape[0] * rowBytes);
}

} // namespace

whale_rt_tensor *newTensor(whale_rt_context *ctx, const TensorSpec &spec,
                           std::string &error) {
  whale_rt_tensor *t = nullptr;
  if (whale_rt_tensor_create(ctx, spec.dtype,
                             static_cast<int32_t>(spec.shape.size()),
                             spec.shape.data(), &t) != WHALE_RT_OK) {
    error = whale_rt_last_error(ctx);
    return nullptr;
  }
  return t;
}

std::string openRank(const std::string &deviceName, int threads, int64_t memory,
                     uint64_t seed, bool ampBf16, whale_rt_comm *comm,
                     const GridShape &grid, const RankSlot &place,
                     RankEntry entry, const std::vector<TensorSpec> &inputs,
                     OpenedRank &out) {
  out.place = place;
  out.entry = entry;
  out.cpuThreads = deviceName.rfind("cpu", 0) == 0 ? std::max(1, threads) : 0;
  whale_rt_context *opened = nullptr;
  char why[640] = "";
  if (whale_rt_context_open(deviceName.c_str(), threads, memory, seed, &opened,
                            why, sizeof why) != WHALE_RT_OK)
    return "cannot open " + deviceName + ": " + why;
  out.ctx.reset(opened);
  if (ampBf16)
    whale_rt_set_amp(opened, WHALE_RT_AMP_BF16);
  if (whale_rt_context_bind(opened, comm, grid.stages, grid.replicas,
                            grid.grid.data(), static_cast<int32_t>(place.stage),
                            static_cast<int32_t>(place.replica)) != WHALE_RT_OK)
    return "cannot set up rank " + std::to_string(place.device) + ": " +
           whale_rt_last_error(opened);
  std::string error;
  for (const TensorSpec &t : inputs) {
    whale_rt_tensor *in = newTensor(opened, t, error);
    if (!in)
      return error;
    out.inputs.push_back(in);
  }
  return "";
}

std::vector<int> bindContexts(const std::vector<whale_rt_context *> &contexts,
                              const std::vector<int64_t> &devices,
                              const std::vector<int> &threads,
                              bool underLauncher) {
  std::vector<size_t> order(contexts.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return devices[a] < devices[b]; });
  std::vector<int> ordered;
  for (size_t i : order)
    ordered.push_back(threads[i]);
  std::vector<std::vector<int>> cpus =
      rt::placeRankThreads(ordered, underLauncher);
  std::vector<int> driving(contexts.size(), -1);
  for (size_t k = 0; k < order.size(); ++k) {
    if (cpus[k].empty())
      continue;
    std::vector<int32_t> list(cpus[k].begin(), cpus[k].end());
    // Unbound workers run as well, only where the scheduler puts them.
    if (whale_rt_context_pin_workers(contexts[order[k]], list.data(),
                                     static_cast<int32_t>(list.size())) ==
        WHALE_RT_OK)
      driving[order[k]] = cpus[k][0];
  }
  return driving;
}

void placeRanks(std::vector<OpenedRank> &ranks, bool underLauncher) {
  std::vector<whale_rt_context *> contexts;
  std::vector<int64_t> devices;
  std::vector<int> threads;
  for (const OpenedRank &rank : ranks) {
    contexts.push_back(rank.ctx.get());
    devices.push_back(rank.place.device);
    threads.push_back(rank.cpuThreads);
  }
  std::vector<int> driving =
      bindContexts(contexts, devices, threads, underLauncher);
  for (size_t i = 0; i < ranks.size(); ++i)
    ranks[i].cpu = driving[i];
}

namespace {

/// Binds the calling rank thread to `cpu` (-1: back to the process's
/// CPUs), once per change: a rank thread runs rank i of whichever plan.
void bindRankThread(int cpu) {
  thread_local int boundTo = -1;
  if (cpu == boundTo)
    return;
  if (cpu >= 0 ? rt::pinThisThread(cpu) : rt::unpinThisThread())
    boundTo = cpu;
}

} // namespace

StepOutcome runStep(std::vector<OpenedRank> &ranks,
                    const std::vector<whale_rt_tensor *> &global,
                    whale_rt_comm *comm, RankThreads &threads, int64_t step,
                    double lrFactor, const InjectedFailure &inject) {
  StepOutcome out;
  out.losses.assign(ranks.size(), 0);
  std::mutex failMutex;
  const std::function<void(size_t)> runRank = [&](size_t i) {
    OpenedRank &rank = ranks[i];
    bindRankThread(rank.cpu);
    whale_rt_context *ctx = rank.ctx.get();
    // Under the device's share of its cores' time, if it has one.
    whale_rt_context_enter(ctx);
    whale_rt_status copied = WHALE_RT_OK;
    for (size_t k = 0; k < global.size() && copied == WHALE_RT_OK; ++k)
      copied = copyRows(global[k], ctx, rank.inputs[k], rank.place.firstRow);
    whale_rt_set_train_state(ctx, step + 1, lrFactor);
    // Dropout finds each row's place in the global batch from here.
    whale_rt_set_rows(ctx, rank.place.firstRow, /*training=*/1);
    whale_rt_tensor *loss = nullptr;
    const int64_t device = rank.place.device;
    // A failure injected for tests stops the rank before its step; under
    // mpirun its process dies as a crashed one would (SIGKILL), and the
    // launcher ends and reports the job.
    const bool dies = inject.step == step + 1 && inject.device == device;
    if (dies && inject.killProcess)
      std::raise(SIGKILL);
    if (dies || copied != WHALE_RT_OK ||
        runGraphedStep(ctx, rank.entry, rank.inputs.data(), rank.graph,
                       step + 1, &loss) != WHALE_RT_OK) {
      std::string who = "rank " + std::to_string(device);
      std::lock_guard<std::mutex> lock(failMutex);
      if (out.error.empty()) {
        out.error = who + ": " +
                    (dies ? std::string("failed (injected for a test)")
                          : std::string(whale_rt_last_error(ctx)));
        out.failedDevice = device;
        whale_rt_comm_abort(comm, (who + " failed").c_str());
      }
      return;
    }
    float value = 0;
    if (whale_rt_tensor_read(ctx, loss, &value, sizeof value) != WHALE_RT_OK) {
      std::lock_guard<std::mutex> lock(failMutex);
      if (out.error.empty())
        out.error = whale_rt_last_error(ctx);
    }
    out.losses[i] = value;
    if (loss != rank.graph.loss)
      whale_rt_tensor_release(ctx, loss);
  };
  if (std::string err = threads.run(ranks.size(), runRank); !err.empty())
    out.error = err;
  // The ranks move through the phases together; once replaying (or off)
  // they stay, and the step does no more here.
  const RankGraph::Phase phase =
      ranks.empty() ? RankGraph::Phase::Off : ranks[0].graph.phase;
  if (out.error.empty() && phase != RankGraph::Phase::Replay &&
      phase != RankGraph::Phase::Off) {
    std::vector<RankGraph *> graphs;
    std::vector<std::string> who;
    std::vector<whale_rt_context *> contexts;
    for (OpenedRank &rank : ranks) {
      graphs.push_back(&rank.graph);
      who.push_back("rank " + std::to_string(rank.place.device));
      contexts.push_back(rank.ctx.get());
    }
    advanceGraphs(graphs, who, contexts);
  }
  return out;
}

std::string graphReport(const std::vector<OpenedRank> &ranks) {
  std::vector<const RankGraph *> graphs;
  for (const OpenedRank &rank : ranks)
    graphs.push_back(&rank.graph);
  return graphReport(graphs);
}

std::string copyRanksState(whale_rt_context *host,
                           std::vector<OpenedRank> &ranks,
                           const ProgramOf &programOf, int stateCount,
                           bool toRanks) {
  for (OpenedRank &rank : ranks) {
    if (toRanks)
      forgetGraph(rank.ctx.get(), rank.graph);
    const StageProgram &st = programOf(rank.place);
    const int64_t replica = rank.place.replica;
    // Out of the ranks, the first shard group's copy of each parameter
    // (the others hold the same), and sharded state from its owner.
    if (std::string err = copyShardState(
            host, rank.ctx.get(), st.params, stateCount, replica % st.shards,
            toRanks, replica, toRanks || replica < st.shards);
        !err.empty())
      return err;
  }
  return "";
}

std::string sumLoss(const std::vector<double> &losses,
                    const std::vector<OpenedRank> &ranks, int64_t step,
                    double &loss) {
  loss = 0;
  for (double l : losses)
    loss += l;
  std::string origin;
  for (const OpenedRank &rank : ranks)
    if (origin.empty())
      origin = whale_rt_first_nonfinite(rank.ctx.get());
  return StepLog::nonFinite(step + 1, loss, origin);
}

std::string evaluateOnHost(whale_rt_context *host, RankEntry forward,
                           DataSource &source,
                           std::vector<whale_rt_tensor *> &inputs,
                           int64_t steps, double &loss) {
  double sum = 0;
  for (int64_t k = 0; k < steps; ++k) {
    if (std::string err = source.fill(k, inputs); !err.empty())
      return "evaluating: " + err;
    whale_rt_tensor *out = nullptr;
    float value = 0;
    if (forward(host, inputs.data(), &out) != WHALE_RT_OK ||
        whale_rt_tensor_read(host, out, &value, sizeof value) != WHALE_RT_OK)
      return "evaluating: " + std::string(whale_rt_last_error(host));
    sum += value;
    whale_rt_tensor_release(host, out);
  }
  loss = sum / double(steps);
  return "";
}

std::string processTracePath(const std::string &path, int32_t processRank) {
  if (path.empty() || processRank <= 0)
    return path;
  size_t dot = path.rfind('.');
  size_t slash = path.find_last_of("/\\");
  std::string suffix = ".process-" + std::to_string(processRank);
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
    return path + suffix;
  return path.substr(0, dot) + suffix + path.substr(dot);
}

uint64_t hashBytes(const std::string &bytes, uint64_t hash) {
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::string checkRankParameters(const OpenedRank &rank,
                                const StageProgram &program, int stateCount) {
  const std::string where = "stage " + std::to_string(rank.place.stage) +
                            ", replica " + std::to_string(rank.place.replica);
  std::map<std::string, const Parameter *> listed;
  // What this rank holds: a parameter sharded over the replicas
  // (shard_parameters) lives on its owner alone.
  for (const Parameter &p : program.params)
    if (p.holdsValue(rank.place.replica))
      listed[p.name] = &p;
  bool keptStates = false, holdsState = false;
  const int64_t made = whale_rt_param_count(rank.ctx.get());
  for (int64_t i = 0; i < made; ++i) {
    whale_rt_tensor *t = nullptr;
    const char *name = whale_rt_param_name(rank.ctx.get(), i, &t);
    auto it = name ? listed.find(name) : listed.end();
    if (it == listed.end())
      return where + "'s program made the parameter '" +
             std::string(name ? name : "") +
             "', which the compiled plan does not list: its checkpoints "
             "would lack it; compile the plan again";
    const Parameter &p = *it->second;
    listed.erase(it);
    // The optimizer tensors it keeps, against the manifest's count: a
    // checkpoint saves that many, and a wrong count made one that no run
    // loads. Before its first update (a frozen parameter) it has none.
    const int32_t states = whale_rt_optimizer_state_count(rank.ctx.get(), t);
    if (states != 0 && states != stateCount)
      return where + "'s program keeps " + std::to_string(states) +
             " optimizer tensors for '" + p.name +
             "', but the compiled plan's manifest says " +
             std::to_string(stateCount) +
             " (optimizer_states): its checkpoints would not load; compile "
             "the plan again";
    keptStates = keptStates || states == stateCount;
    holdsState = holdsState || p.holdsState(rank.place.replica);
    const int32_t dims = whale_rt_tensor_rank(t);
    const int64_t *shape = whale_rt_tensor_shape(t);
    bool fits = dims == static_cast<int32_t>(p.shape.size());
    for (int32_t d = 0; fits && d < dims; ++d)
      fits = p.shards > 1 && d == p.axis ? shape[d] <= p.shape[d]
                                         : shape[d] == p.shape[d];
    if (!fits) {
      std::string actual;
      for (int32_t d = 0; d < dims; ++d)
        actual += (d ? "x" : "") + std::to_string(shape[d]);
      return where + "'s program made the parameter '" + p.name + "' as " +
             actual + ", not at the shape the compiled plan lists";
    }
  }
  // What is left was listed and never made.
  if (!listed.empty())
    return where + "'s program never made the parameter '" +
           listed.begin()->first + "' the compiled plan lists";
  // A count above what the optimizer keeps (2 for plain SGD): no parameter
  // this rank updates has the tensors the manifest promises.
  if (stateCount > 0 && holdsState && !keptStates)
    return where +
           "'s program keeps no optimizer tensors, but the compiled "
           "plan's manifest says " +
           std::to_string(stateCount) +
           " a parameter (optimizer_states): its checkpoints would not "
           "load; compile the plan again";
  return "";
}

} // namespace whale
