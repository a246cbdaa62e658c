//===- TrainLoop.h - the one loop every training run steps through -*- C++
//-*-===//
//
// `whale run` on one device (lib/train/Train.cpp), under a plan in threads
// or processes (lib/train/PlannedRun.h) and `whale-exec`
// (runtime/bundle/BundleRun.h) differ in how a step, a held-out evaluation
// and a save are done, and in what may happen between steps (a change of
// devices, a recovery). When each is done is decided here, once, for all
// of them:
//   - a stop asked by a signal ends the run at a step boundary, saving the
//     steps done since the last save where a save path was given;
//   - each step's data is filled from the data order, its samples logged;
//   - each step's loss, held-out loss (eval_every), metrics line and
//     progress report, in that order;
//   - the saves after every save_every-th step and after the last;
//   - a step that recovers goes on after the state it recovered, the
//     losses of the steps it undid dropped.
// A run derives from it and says how (the virtual functions below).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_RUN_TRAINLOOP_H
#define WHALE_RUNTIME_RUN_TRAINLOOP_H

#include "runtime/WhaleRuntime.h"
#include "runtime/run/SampleLog.h"
#include "runtime/run/StepLog.h"
#include "runtime/run/TrainSettings.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace whale {

class DataSource;

class TrainLoop {
public:
  /// Where the run reads and writes, and what it reports to.
  struct Setup {
    TrainSettings settings;
    int64_t globalBatch = 1;
    /// Checkpoints go here (save_every and the last step); "": none.
    std::string savePath;
    std::string metricsPath; ///< JSON lines, one per step
    std::string samplesPath; ///< the samples each replica trained on
    std::function<void(const StepFigures &)> onStep;
  };

  /// How the run ended: the losses of the steps it ran, in order.
  struct Outcome {
    bool ok = false;
    /// Not ok because a stop was asked: the run ended at a step boundary.
    bool stopped = false;
    std::string error;
    int64_t firstStep = 1; ///< 1-based; later than 1 when resumed
    std::vector<double> losses;
    std::vector<std::pair<int64_t, double>> evalLosses;
  };

  /// Copies `outcome` into `result` (a whale::TrainResult or a
  /// RunPlanResult: the steps run, their losses, how it ended); whether it
  /// went well.
  template <class Result>
  static bool intoResult(Outcome &&outcome, Result &result) {
    result.firstStep = outcome.firstStep;
    result.losses = std::move(outcome.losses);
    result.evalLosses = std::move(outcome.evalLosses);
    result.stopped = outcome.stopped;
    result.ok = outcome.ok;
    result.error = std::move(outcome.error);
    return outcome.ok;
  }

  virtual ~TrainLoop() = default;

  /// Runs steps `first` (0-based: the steps done before, by a checkpoint)
  /// to the settings' last on the batches `source` fills into `inputs`
  /// (the global batch, one tensor per model input).
  Outcome run(const Setup &setup, int64_t first, DataSource &source,
              std::vector<whale_rt_tensor *> &inputs);

  /// The same loop a step at a time, for a host that drives it (a Python
  /// `for step in run`): begin() opens the logs (false: the run failed,
  /// end() says why); each next() runs one step with its evaluation,
  /// report and saves, giving its figures, and is false once the run is
  /// over (its steps done, stopped or failed); end() then gives the
  /// outcome. end() before the last step ends the run as a stop asked
  /// would, saving where a save path was given. The objects passed to
  /// begin() must outlive end().
  bool begin(const Setup &setup, int64_t first, DataSource &source,
             std::vector<whale_rt_tensor *> &inputs);
  bool next(StepFigures *figures);
  Outcome end();
  /// Asks the run to stop before its next step, as a signal does, from any
  /// thread (the host's own stop, where a signal is the whole process's).
  void requestStop() { stopRequested.store(true, std::memory_order_relaxed); }
  /// The steps done (0-based count, a checkpoint's included).
  int64_t stepsDone() const { return nextStep; }

protected:
  /// What a step, or the work after it, came to.
  struct StepEnd {
    std::string error; ///< the whole message, "step N: ..." included
    double loss = 0;   ///< the step's, when it ran
    /// Set when the run recovered to the state after this step (0-based
    /// count of steps done): it goes on from there; -1: it did not.
    int64_t resumedAfter = -1;
  };

  /// Before step `step` (0-based) runs, after the stop check: a change of
  /// devices, for instance. "" or what failed the run.
  virtual std::string beforeStep(int64_t step) { return ""; }
  /// Runs step `step` (0-based) at learning-rate factor `lrFactor` on the
  /// batch in the inputs; `startNs` is when the step began (before its data
  /// was filled), for the trace.
  virtual StepEnd runStep(int64_t step, double lrFactor, int64_t startNs) = 0;
  /// The held-out loss of the parameters as they are now.
  virtual std::string evaluate(double &loss) = 0;
  /// Saves the state after `nextStep` steps to the save path; `last`: the
  /// run's final save.
  virtual std::string save(int64_t nextStep, bool last) = 0;
  /// After step `done` (1-based) was run, evaluated, logged and saved: the
  /// in-memory store's update, for instance.
  virtual StepEnd afterStep(int64_t done) { return {}; }
  /// Whether a stop was asked (a signal or requestStop(), by default; a
  /// run over processes answers what they agreed).
  virtual bool stopAsked();
  /// A stop the host asked with requestStop().
  bool hostStopRequested() const {
    return stopRequested.load(std::memory_order_relaxed);
  }
  /// Whether this process writes the metrics and the sample log (under
  /// mpirun, only process 0).
  virtual bool reports() const { return true; }
  /// The rows of the global batch each data replica computes, in replica
  /// order, for the sample log.
  virtual std::vector<int64_t> replicaRows() const = 0;

  /// The step of the last checkpoint this run saved before its end; -1
  /// before any.
  int64_t lastSaved() const { return saved; }
  /// Opens the metrics and the sample log for appending, for a process
  /// that reports from now on (process 0 was lost); "" or why not.
  std::string startReporting();

private:
  std::string openLogs(bool resuming);
  /// Where a stop asked before step `step` leaves the run.
  void stopBefore(int64_t step);

  bool fail(std::string message);

  const Setup *setup = nullptr;
  DataSource *source = nullptr;
  std::vector<whale_rt_tensor *> *inputs = nullptr;
  std::atomic<bool> stopRequested{false};
  int64_t nextStep = 0;
  bool over = true;
  Outcome outcome;
  StepLog log;
  SampleLog samples;
  int64_t first = 0, saved = -1;
};

} // namespace whale

#endif
