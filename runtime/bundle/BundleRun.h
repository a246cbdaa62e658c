//===- BundleRun.h - a compiled plan's run, stepped by the one loop -*- C++
//-*-===//
//
// The driver of `whale-exec` (runtime/bundle/RunPlan.h): a compiled plan's
// ranks, stepped by the one train loop (runtime/run/TrainLoop.h) as `whale
// run` steps a plan's (lib/train/PlannedRun.h), in parts with one job each:
//   - RunPlan.cpp: the start, the steps, held-out losses and saves;
//   - BundleChange.cpp: changes to other compiled plans (an elastic
//     schedule's, a control file's);
//   - BundleRecovery.cpp: the state kept in memory, and going on after a
//     failed rank under a fallback plan.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_BUNDLE_BUNDLERUN_H
#define WHALE_RUNTIME_BUNDLE_BUNDLERUN_H

#include "runtime/bundle/OpenedBundle.h"
#include "runtime/bundle/RunPlan.h"
#include "runtime/run/BatchRows.h"
#include "runtime/run/ControlFile.h"
#include "runtime/run/DataSource.h"
#include "runtime/run/Interrupt.h"
#include "runtime/run/RankThreads.h"
#include "runtime/run/TrainLoop.h"
#include "runtime/state/StateStore.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace whale {

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
  /// This process's ranks' allocator peaks, in rank order.
  std::vector<int64_t> peakMemory() const;
  const std::vector<OpenedRank> &openedRanks() const { return plan->ranks; }

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
  /// Checks the recovery options against the plan: a device and a step
  /// the run has, fallbacks of the same job.
  std::string checkRecovery(int64_t firstStep);
  /// After `failure` during step `step` (0-based; `name` says which): the
  /// job going on under a fallback plan when a rank failed in one process
  /// (on device `lostDevice`) or processes were lost under mpirun, and a
  /// state to go back to is held; else the failure, and why it ends the
  /// job.
  StepEnd recoverFrom(int64_t step, const std::string &name,
                      const std::string &failure, int64_t lostDevice);
  /// The first --fallback plan, read into `next`, that runs on the devices
  /// `left` in equal blocks for `processes` processes (1: threads of this
  /// one); "" or, for each, why not ("; FOLDER: why").
  std::string firstFallback(const std::vector<RankDevice> &left,
                            int32_t processes,
                            std::unique_ptr<OpenedBundle> &next);
  /// After the rank on device `lost` failed: the job on the first fallback
  /// that runs on the devices left, from the store or the last checkpoint.
  std::string recover(int64_t lost, ExecRecovery &report);
  /// Under mpirun, after processes died: the survivors' communicator, the
  /// first fallback whose devices the survivors hold in equal blocks, the
  /// state rebuilt in its ranks (runtime/state/ProcessRecovery.h).
  std::string recoverProcesses(ExecRecovery &report);
  /// The plan the run is on now, in place of the last.
  void replacePlan(std::unique_ptr<OpenedBundle> next);

  const RunPlanOptions &options;
  const BundleOverrides &overrides;
  /// The processes, renumbered when some were lost.
  ProcessWorld world;
  /// The survivors' MPI communicator, once processes were lost.
  std::unique_ptr<void, void (*)(void *)> survivorsComm{nullptr,
                                                        whale_rt_mpi_comm_free};
  /// Plans abandoned when processes were lost: their collectives with the
  /// lost processes never finished, and MPI may still write into their
  /// ranks' buffers, so they are freed only when the run ends.
  std::vector<std::unique_ptr<OpenedBundle>> abandoned;
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
  /// The devices of each scheduled change's plan, in the schedule's order
  /// (read before the first step): --fail-rank names one of its step's.
  std::vector<int64_t> scheduledDevices;
};

} // namespace whale

#endif
