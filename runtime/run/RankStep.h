//===- RankStep.h - a plan's ranks, each a thread, one step at a time -*- C++
//-*-===//
//
// What every driver of a plan does alike, whether its rank programs were
// JIT-compiled (lib/train/PlannedRun.cpp) or loaded from a compiled plan
// (tools/whale-exec): open each rank's context on its device, bound to the
// communicator at its place in the grid; then each step hand every rank its
// replica's rows of the global batch and run the ranks on threads of their
// own. The first rank to fail aborts the communicator so the others stop
// waiting, and its own message is the one reported.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_RUN_RANKSTEP_H
#define WHALE_RUNTIME_RUN_RANKSTEP_H

#include "runtime/WhaleRuntime.h"
#include "runtime/bundle/PlanManifest.h"
#include "runtime/run/DataSource.h"
#include "runtime/run/RankThreads.h"
#include "runtime/run/StepGraphs.h"

#include <functional>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace whale {

/// Seconds a rank waits on another before the run fails naming both (the
/// communicator of every driver of a plan).
inline constexpr double kCommTimeoutSeconds = 120;

using ContextPtr =
    std::unique_ptr<whale_rt_context, void (*)(whale_rt_context *)>;

/// Where a rank sits and what it runs.
struct RankSlot {
  int64_t stage = 0, replica = 0;
  int64_t device = 0;   ///< its index in the cluster
  int64_t firstRow = 0; ///< of its replica's rows in the global batch
};

struct OpenedRank {
  RankSlot place;
  RankEntry entry = nullptr;
  ContextPtr ctx{nullptr, whale_rt_context_destroy};
  std::vector<whale_rt_tensor *> inputs;
  RankGraph graph; ///< its step held by the device (StepGraphs.h)
  /// A CPU device's threads (its rank's thread and its pool's workers); 0
  /// for a GPU's rank, whose thread only launches.
  int cpuThreads = 0;
  /// The CPU its rank's thread is bound to (placeRanks); -1: unbound.
  int cpu = -1;
};

/// Binds the CPU ranks' threads to cores of their own, in device order,
/// where they fit (runtime/core/CpuPlacement.h): each rank's pool workers
/// now, its thread as it runs its next step. `underLauncher`: processes
/// of mpirun or srun, which the launcher binds; then nothing is bound.
void placeRanks(std::vector<OpenedRank> &ranks, bool underLauncher);

/// What placeRanks does, for any contexts: those of `devices` (one each),
/// a CPU device's with `threads[i]` threads (0: a GPU's, bound to none).
/// Binds their workers; returns the CPU each one's driving thread is to be
/// bound to, -1 where none (its driver binds it: `whale profile` timing
/// each op alone binds as the run does).
std::vector<int> bindContexts(const std::vector<whale_rt_context *> &contexts,
                              const std::vector<int64_t> &devices,
                              const std::vector<int> &threads,
                              bool underLauncher);

/// graphReport over `ranks`.
std::string graphReport(const std::vector<OpenedRank> &ranks);

/// "" when the parameters `rank`'s program made are those `program` lists,
/// each at its shape (a part of it along its axis, where sharded), with the
/// manifest's `stateCount` optimizer tensors each that it updates: checked
/// after the first step, so that a plan whose description is wrong fails
/// there, not at its first save with a checkpoint no run loads.
std::string checkRankParameters(const OpenedRank &rank,
                                const StageProgram &program, int stateCount);

/// How the grid is laid out, for binding a rank to the communicator.
struct GridShape {
  int32_t stages = 1, replicas = 1;
  std::vector<int32_t> grid; ///< grid[s * replicas + r]: a device
};

/// Opens device `deviceName` with `threads` threads and `memory` bytes
/// (0: no limit), binds it to `comm` at `place`, and makes its inputs;
/// "" or why not.
std::string openRank(const std::string &deviceName, int threads, int64_t memory,
                     uint64_t seed, bool ampBf16, whale_rt_comm *comm,
                     const GridShape &grid, const RankSlot &place,
                     RankEntry entry, const std::vector<TensorSpec> &inputs,
                     OpenedRank &out);

/// A tensor of `spec` in `ctx`; null with `error` set when refused.
whale_rt_tensor *newTensor(whale_rt_context *ctx, const TensorSpec &spec,
                           std::string &error);

/// A failure to inject for tests: the rank on `device` fails before step
/// `step` (1-based); under mpirun its process is killed as a crashed one
/// would be.
struct InjectedFailure {
  int64_t device = -1, step = -1;
  bool killProcess = false;
};

struct StepOutcome {
  std::vector<double> losses; ///< per rank, in the order given
  std::string error;          ///< the first rank's failure, or ""
  int64_t failedDevice = -1;  ///< the device of the rank that failed
};

/// Runs step `step` (0-based) on every rank at learning-rate factor
/// `lrFactor`, rank i on thread i of `threads` (kept from step to step),
/// after copying its replica's rows of `global` into its inputs; where the
/// devices can, as a replay of a held step (StepGraphs.h).
StepOutcome runStep(std::vector<OpenedRank> &ranks,
                    const std::vector<whale_rt_tensor *> &global,
                    whale_rt_comm *comm, RankThreads &threads, int64_t step,
                    double lrFactor, const InjectedFailure &inject = {});

/// Before step `step` (0-based) of a traced run that traces every
/// `every`-th step (steps 1, 1 + every, ...): pauses `comm`'s trace for the
/// steps between, which then run as untraced ones do and leave only their
/// length in the trace (category "untraced"). So one process holds both,
/// on the same machine state: what tracing costs a step, measured.
inline void traceOnlyEvery(whale_rt_comm *comm, int64_t step, int64_t every) {
  if (every > 1)
    whale_rt_comm_pause_trace(comm, step % every != 0);
}

/// The stage program a rank runs.
using ProgramOf = std::function<const StageProgram &(const RankSlot &)>;

/// Parameters and their `stateCount` optimizer states between `host`
/// (every parameter whole: a checkpoint, evaluation) and the ranks. Into
/// the ranks (`toRanks`): each rank its part of the sharded ones, and
/// their held steps dropped. Out of them: each stage's first shard group,
/// which holds one part each.
std::string copyRanksState(whale_rt_context *host,
                           std::vector<OpenedRank> &ranks,
                           const ProgramOf &programOf, int stateCount,
                           bool toRanks);

/// The loss of step `step` (0-based): the ranks' shares summed in rank
/// order; "" or, when it is not finite, an error naming the first op of
/// `ranks` that produced a NaN or an infinity.
std::string sumLoss(const std::vector<double> &losses,
                    const std::vector<OpenedRank> &ranks, int64_t step,
                    double &loss);

/// The held-out loss: the mean of `forward`'s loss on the host over the
/// first `steps` batches of `source` (filled into `inputs`, the host's).
std::string evaluateOnHost(whale_rt_context *host, RankEntry forward,
                           DataSource &source,
                           std::vector<whale_rt_tensor *> &inputs,
                           int64_t steps, double &loss);

/// Under mpirun each process traces its own rank: rank 0 to `path`, rank
/// r > 0 to `path` with `.process-r` before its extension (`trace.json`,
/// `trace.process-1.json`), so the files open side by side.
std::string processTracePath(const std::string &path, int32_t processRank);

/// A 64-bit FNV-1a hash of `bytes`, continuing from `hash`: what processes
/// compare to find that they were started on different jobs.
uint64_t hashBytes(const std::string &bytes,
                   uint64_t hash = 0xcbf29ce484222325ull);

} // namespace whale

#endif
