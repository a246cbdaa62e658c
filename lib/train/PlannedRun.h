//===- PlannedRun.h - a train block under a plan, as one loop's parts -*- C++
//-*-===//
//
// One rank per device of the plan's grid, each a context with its own
// device and a thread that runs its stage's JIT-compiled program every step
// (under mpirun, each process its block of them). The loop itself is
// runtime/run/TrainLoop.h, the same as on one device and in whale-exec;
// this says how a planned run does its parts, each in a file of its own:
//   - PlannedRun.cpp: the processes, the plan and its ranks, the checkpoint
//     it starts from, each step, the held-out loss and the figures at the
//     end;
//   - RankState.cpp: the state out of the ranks and into them, by the boxes
//     of the plan's state collection (lib/elastic/StateCollection.h): saves,
//     rank checkpoints and the in-memory store;
//   - DeviceChange.cpp: a change of devices at a step boundary (an elastic
//     schedule, the control file), resharded in memory;
//   - Recovery.cpp: a failed rank or a lost process, the survivors
//     re-planned and their state rebuilt from the store or the last
//     checkpoint.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_TRAIN_PLANNEDRUN_H
#define WHALE_LIB_TRAIN_PLANNEDRUN_H

#include "lib/compile/Cluster.h"
#include "lib/compile/Jit.h"
#include "lib/compile/Planner.h"
#include "lib/compile/StageSignature.h"
#include "runtime/checkpoint/RankFiles.h"
#include "runtime/run/ControlFile.h"
#include "runtime/run/DataSource.h"
#include "runtime/run/Processes.h"
#include "runtime/run/RankStep.h"
#include "runtime/run/TrainLoop.h"
#include "runtime/state/Reshard.h"
#include "runtime/state/StateStore.h"
#include "whale/Train.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace whale {

class PlannedRun : public TrainLoop {
public:
  PlannedRun(Interpreter &interp, const TrainOptions &options,
             TrainResult &result);
  ~PlannedRun() override;

  /// Everything before the first step: the processes, the plan, its ranks,
  /// the checkpoint to resume from, the checks of the schedule; "" or what
  /// fails the run.
  std::string start();
  /// Opens the steps (after start()) for TrainLoop::next; false when
  /// that failed (end() says why).
  bool beginSteps();
  /// Between steps: the state now, whole, into a checkpoint at `path`;
  /// "" or why not.
  std::string saveNow(const std::string &path);
  /// Between steps: every parameter's values now; "" or why not.
  std::string hostParameters(std::map<std::string, std::vector<float>> &out);
  /// Between steps: each parameter's values (all of them) into every
  /// rank that holds a part of it, the state gathered and handed back
  /// once; "" or why not.
  std::string
  setParameters(const std::vector<Training::ParameterValues> &values);
  /// Every parameter of the model, whole, in checkpoint order.
  const std::vector<Parameter> &parameterList() const { return allParams; }
  /// After the last step: the parameters kept, the devices' figures, the
  /// trace; "" or what fails the run.
  std::string finish();
  int32_t process() const { return processRank; }

private:
  // The loop's parts.
  std::string beforeStep(int64_t step) override;
  StepEnd runStep(int64_t step, double lrFactor, int64_t startNs) override;
  std::string evaluate(double &loss) override;
  std::string save(int64_t nextStep, bool last) override;
  StepEnd afterStep(int64_t done) override;
  bool stopAsked() override;
  bool reports() const override { return processRank <= 0; }
  std::vector<int64_t> replicaRows() const override;

  // PlannedRun.cpp
  void phase(const std::string &what) const;
  std::string startProcesses();
  std::string checkProcessHosts();
  std::string checkSameJob();
  std::string openEvaluation();
  std::string loadCheckpoint();
  std::string checkSchedule();
  /// Takes `next` (the model planned for `cluster`) as the plan and opens
  /// its ranks: programs, a communicator, a context per rank.
  std::string openRanks(PlannedModel &&next);
  std::string compileRanks(mlir::ModuleOp module);
  /// Under mpirun every process gets the whole state (each part from the
  /// process holding it): each evaluates alike, and process 0 saves.
  std::string gatherToHost();
  std::string gatherFigures();

  // RankState.cpp
  /// The state after `nextStep` steps into the save path: each rank's own
  /// boxes (--save-ranks), or gathered whole into one file; the host holds
  /// the gathered parameters afterwards when `gatherAnyway`.
  std::string saveState(int64_t nextStep, bool gatherAnyway);
  std::string loadRankCheckpoint();
  /// This process's ranks, for the rank files.
  LocalRanks localRanks();
  std::string updateStore(int64_t step);

  // DeviceChange.cpp
  /// Whether the devices of `spec` can take the run: read, their threads
  /// within the bound, the model planned on them, and under mpirun shared
  /// out among the same processes.
  bool checkDevices(const std::string &spec, Cluster &next,
                    PlannedModel &nextPlan, std::string &why);
  std::string changeDevices(const ElasticChange &change, int64_t step);
  /// The devices changed to `next` (named `name` in errors) after `step`.
  std::string moveTo(const Cluster &next, const std::string &name, int64_t step,
                     const std::string &why = "");
  /// A CPU device whose share of its cores the kernel now enforces other
  /// than planned (its group's quota rewritten under the job), checked
  /// before each step: the cluster with the new shares, each such device's
  /// rate and bandwidth probed anew under it where they were measured or
  /// declared, and in `why` what changed. False where none changed.
  bool sharesChanged(Cluster &next, std::string &why);

  // Recovery.cpp
  std::string recover(int64_t lost, RecoveryReport &report);
  std::string recoverProcesses(RecoveryReport &report);
  /// Under mpirun, a failure `failure` during `step` (0-based): the
  /// recovery when it came from lost processes and a state to resume from
  /// exists, with the step it resumed after; else `failure` to report.
  StepEnd recoverFromLoss(int64_t step, const std::string &failure);

  Interpreter &interp;
  const TrainOptions &options;
  TrainResult &result;
  Cluster cluster;
  std::string error; ///< the last failure a helper wrote

  // Ranks as processes: this one runs the ranks of its block of devices
  // (runtime/run/Processes.h), one each when there are as many processes
  // as devices.
  int32_t processRank = -1, processCount = 0;
  ProcessLayout layout;
  /// The MPI communicator of the job's processes: the caller's (null: the
  /// world), then, after processes are lost, the survivors' own.
  const void *mpiBase = nullptr;
  std::unique_ptr<void, void (*)(void *)> survivorsComm;

  mlir::func::FuncOp model;
  TrainSettings settings;
  int shared = 1; ///< threads of a device that names none
  PlanOptions planOptions;

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
  using CommPtr = std::unique_ptr<whale_rt_comm, void (*)(whale_rt_comm *)>;
  // What one device set runs with; made anew at each change of devices.
  PlannedModel plan;
  int64_t planVersion = 0; ///< counts the plans the run has had
  std::vector<Programs> programs;
  CommPtr comm;
  /// The trace is written however the run ends (of the last device set,
  /// under --elastic).
  struct TraceWriter {
    CommPtr &of;
    std::string path;
    std::string write();
    ~TraceWriter() { write(); }
  } traceWriter;
  std::vector<OpenedRank> ranks;
  /// Each rank's thread, kept from step to step (rank i on thread i).
  RankThreads rankThreads;
  /// Ranks and communicators abandoned when processes were lost: their
  /// collectives with the lost processes never finished, and MPI may still
  /// write what survivors sent into those collectives' buffers (the ranks'
  /// memory, the communicator's scratch), so neither is freed before the
  /// run ends; the ranks go before the communicator they were bound to.
  struct Abandoned {
    std::vector<std::vector<OpenedRank>> ranks;
    std::vector<CommPtr> comms;
    ~Abandoned() {
      ranks.clear();
      comms.clear();
    }
  } abandoned;
  std::vector<Parameter> allParams;
  const std::vector<Stage> *stagesOf = nullptr;
  /// The program of a rank's stage (replica 0's: every variant names the
  /// same parameters).
  ProgramOf programOf;

  // The global batch, in a context of its own.
  std::unique_ptr<DataSource> source;
  ContextPtr host;
  std::vector<whale_rt_tensor *> global;

  int64_t first = 0;     ///< steps done before this run (a checkpoint's)
  Setup loop;            ///< what beginSteps() gave the loop
  size_t nextChange = 0; ///< the elastic schedule's next change
  StateStore store;      ///< replicateEvery, runtime/state/StateStore.h
  /// --fail-rank's failure happens once a job: after a recovery it is
  /// never injected again (a process that was still finishing an earlier
  /// step when another died never reached the injection, and must not
  /// inject it when the survivors run that step again).
  bool injected = false;

  // Held-out evaluation (eval_every): the parameters gathered on the host,
  // the model's forward pass there, one device, at the global batch.
  std::unique_ptr<DataSource> evalSource;
  std::unique_ptr<JitProgram> evalProgram;
  JitProgram::Entry evalForward = nullptr;

  /// A stop asked by a signal. Under mpirun every process learns whether
  /// any was asked with the step's losses (gatherRankLosses), so that all
  /// stop after the same step and save together.
  bool stopAgreed = false;
  ControlFile control;
};

/// Replaces `plan` by `next`, dropping the old plan's modules before the
/// context that owns them (a member-wise move would drop the context
/// first).
void replacePlan(PlannedModel &plan, PlannedModel &&next);

/// `whale run --control FILE`: a control file whose requests are cluster
/// specs.
ControlFile deviceControlFile(const std::string &path);

/// "" when the devices of `cluster` fit in one process (threads of
/// `totalThreads` shared among devices that name none), or why not.
std::string checkProcessThreads(const Cluster &cluster, int totalThreads);

} // namespace whale

#endif
