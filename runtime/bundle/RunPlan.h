//===- RunPlan.h - training from a compiled plan -----------------*- C++
//-*-===//
//
// The ahead-of-time runner's driver: reads a folder `whale compile
// --emit=bundle` wrote, loads its rank programs' shared objects, opens a
// rank per device of its grid (threads of this process) and trains as
// `whale run` would with the same plan: the same data order, the same
// losses, the same metrics lines and checkpoint. It links the runtime only.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_BUNDLE_RUNPLAN_H
#define WHALE_RUNTIME_BUNDLE_RUNPLAN_H

#include "runtime/run/ElasticSchedule.h"
#include "runtime/run/StepLog.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace whale {

struct RunPlanOptions {
  std::string folder;           ///< what `whale compile --emit=bundle` wrote
  std::optional<int64_t> steps; ///< overrides the compiled plan's
  std::optional<uint64_t> seed; ///< overrides the compiled plan's
  /// Threads in all for devices that name none (0: every core).
  int threads = 0;
  /// The corpus of a text or tokens source, instead of the path compiled
  /// in (the data of a plan compiled on one machine and run on another).
  std::string dataPath;
  std::string metricsPath; ///< JSON lines, one per step
  /// JSON lines, one per step: the dataset samples each data-parallel
  /// replica computed on (runtime/run/SampleLog.h).
  std::string samplesPath;
  std::string tracePath; ///< a Chrome trace of every op of every step
  /// The trace's ops are not checked for NaN and infinity, so its steps
  /// take as long as untraced ones: a profiling run's trace, for
  /// `whale profile --from-trace` (with a plan compiled --trace-sites).
  bool traceWithoutChecks = false;
  /// Only every n-th step traced, the others untraced in the same trace
  /// (TrainOptions::traceEvery).
  int64_t traceEvery = 1;
  std::string savePath; ///< a checkpoint written at the end (and save_every)
  /// Save one file per rank, each with the boxes it holds, into the folder
  /// savePath: it loads under any plan of the model, resharded
  /// (docs/elastic.md).
  bool saveRanks = false;
  /// A checkpoint to resume from: a single file or a folder of rank files,
  /// of this plan or any other of the same model.
  std::string loadPath;
  std::function<void(const StepFigures &)> onStep;
  /// Changes to other compiled plans of the model while the job runs, in
  /// step order: after each change's step the job goes on under that plan,
  /// its state moved in memory (docs/aot.md).
  std::vector<ScheduledChange> elastic;
  /// A file a person writes the folder of another compiled plan of the
  /// model into: at the next step boundary the job goes on under it and
  /// the file is removed. A plan that cannot take the run over is reported
  /// in the result's `controlErrors` and the job goes on where it is.
  std::string controlPath;
  /// Ranks as processes: under mpirun (or srun) each process runs the rank
  /// of its MPI rank's device; the process of rank 0 reports.
  bool processes = false;
  /// Keep the state in memory after every this many steps (each rank's
  /// boxes, and a copy with the next rank), so that a failed rank costs
  /// the steps since then (0: never).
  int64_t replicateEvery = 0;
  /// Compiled plans of the model to go on under when a rank fails: the
  /// first whose devices all survive takes the job, its state from memory
  /// or else from the last checkpoint (docs/aot.md).
  std::vector<std::string> fallbacks;
  /// For tests: the rank on this device fails during this step (1-based),
  /// once a job; -1: none.
  int64_t failDevice = -1, failStep = -1;
};

/// What one change of compiled plans did.
struct ExecChange {
  int64_t afterStep = 0;
  std::string plan; ///< the folder of the plan it changed to
  int64_t ranksBefore = 0, ranksAfter = 0;
  int64_t movedBytes = 0, stayedBytes = 0;
  /// Under mpirun: the bytes sent from one process to another.
  int64_t processBytes = 0;
  double seconds = 0; ///< opening the plan and moving the state
};

/// What one recovery from a failed rank did.
struct ExecRecovery {
  int64_t failedStep = 0;   ///< the step during which the rank failed
  int64_t resumedAfter = 0; ///< the step of the state it went on from
  std::string source;       ///< "memory", or "checkpoint PATH"
  std::string failure;      ///< the failed rank's message
  std::string plan;         ///< the folder of the plan it went on under
  int64_t ranksBefore = 0, ranksAfter = 0;
  int64_t movedBytes = 0;
  /// Under mpirun: the processes lost, and the bytes of state the
  /// survivors sent each other to rebuild it.
  int64_t processesLost = 0, processBytes = 0;
  double seconds = 0; ///< from the failure to the state in the new ranks
};

struct RunPlanResult {
  bool ok = false;
  /// Not ok because a signal asked the run to stop: it ended at a step
  /// boundary, its steps saved where a save path was given.
  bool stopped = false;
  std::string error;
  std::string model;
  std::vector<double> losses; ///< per step run, from firstStep
  int64_t firstStep = 1;
  /// The held-out loss after each step that evaluated (eval_every).
  std::vector<std::pair<int64_t, double>> evalLosses;
  int64_t ranks = 0; ///< of the plan the run ended on
  /// Each change of compiled plans, in order.
  std::vector<ExecChange> changes;
  /// Each recovery from a failed rank, in order.
  std::vector<ExecRecovery> recoveries;
  int64_t storeUpdates = 0; ///< the times the state was kept in memory
  /// The most each of this process's ranks held at once (its allocator's
  /// peak, bytes), of the plan the run ended on, in rank order.
  std::vector<int64_t> peakMemory;
  /// How the steps ran on devices that can hold one (StepGraphs.h): one
  /// line, or "".
  std::string stepGraphs;
  /// Changes asked for in the control file that could not be made, each
  /// with the step and why.
  std::vector<std::string> controlErrors;
  int32_t processRank = -1; ///< this process's, under mpirun
};

RunPlanResult runCompiledPlan(const RunPlanOptions &options);

} // namespace whale

#endif
