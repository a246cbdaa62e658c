//===- StepLog.h - what each train step reports -------------------*- C++
//-*-===//
//
// One metrics line per step (JSON lines) and the host's progress callback,
// the same for a run on one device and a planned run on many.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_RUN_STEPLOG_H
#define WHALE_RUNTIME_RUN_STEPLOG_H

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <string>

namespace whale {

/// What a step reports, in the runtime's own terms (the library hands its
/// hosts the same figures as whale::StepReport).
struct StepFigures {
  int64_t step = 0;  ///< 1-based
  int64_t steps = 0; ///< the last step of this run
  double loss = 0;
  double samplesPerSecond = 0; ///< of this step
  double elapsedSeconds = 0;   ///< since the run started
  double learningRate = 0;     ///< the schedule's, times the optimizer's lr
  /// The held-out loss taken after this step (eval_every), else NaN.
  double evalLoss = std::numeric_limits<double>::quiet_NaN();
};

/// The error of a run stopped by an interrupt (Ctrl-C in the REPL).
/// `savedTo`: where the state after `step` was saved as the run stopped,
/// or "" when it was not.
inline std::string interruptedAfter(int64_t step,
                                    const std::string &savedTo = "") {
  return "interrupted after step " + std::to_string(step) +
         (!savedTo.empty() ? "; its state is saved in " + savedTo
          : step > 0       ? " (nothing saved: --save keeps what is done)"
                           : "");
}

class StepLog {
public:
  using Clock = std::chrono::steady_clock;

  /// Opens the metrics file `metricsPath` (nothing when empty; appending
  /// when resuming); "" when it worked. Every step goes to the metrics;
  /// `onStep` sees every `logEvery`-th step and the last.
  std::string open(const std::string &metricsPath,
                   std::function<void(const StepFigures &)> onStep,
                   bool resuming, int64_t logEvery = 1) {
    this->onStep = std::move(onStep);
    every = std::max<int64_t>(1, logEvery);
    path = metricsPath;
    if (metrics.is_open())
      metrics.close();
    if (path.empty())
      return "";
    metrics.open(path, resuming ? std::ios::app : std::ios::trunc);
    return metrics ? "" : "cannot write metrics to '" + path + "'";
  }

  /// Reports a step; "" when the metrics line was written (a full disk or
  /// a failing device is an error of the run, not lost lines).
  /// `dataSeconds`: what the step waited for its batch (a data source that
  /// makes it ahead keeps that to a copy). `figures` (may be null) receives
  /// what was reported.
  std::string report(int64_t step, int64_t steps, double loss, int64_t batch,
                     Clock::time_point stepStart, double learningRate,
                     double evalLoss = std::numeric_limits<double>::quiet_NaN(),
                     double dataSeconds = 0, StepFigures *figures = nullptr) {
    double seconds =
        std::chrono::duration<double>(Clock::now() - stepStart).count();
    StepFigures r{step,
                  steps,
                  loss,
                  batch / std::max(seconds, 1e-9),
                  std::chrono::duration<double>(Clock::now() - start).count(),
                  learningRate,
                  evalLoss};
    if (metrics.is_open()) {
      // The loss to the last bit (17 digits give a double back exactly), so
      // runs can be compared as the numerical contract compares them.
      char val[64] = "";
      if (!std::isnan(evalLoss))
        std::snprintf(val, sizeof val, ", \"val_loss\": %.17g", evalLoss);
      char line[320];
      std::snprintf(
          line, sizeof line,
          "{\"step\": %lld, \"loss\": %.17g, \"samples_per_s\": %.2f, "
          "\"time_s\": %.4f, \"data_s\": %.4f, \"lr\": %.6g%s}\n",
          static_cast<long long>(r.step), loss, r.samplesPerSecond,
          r.elapsedSeconds, dataSeconds, learningRate, val);
      metrics << line << std::flush;
      if (!metrics)
        return "cannot write metrics to '" + path +
               "': " + std::strerror(errno);
    }
    if (onStep && (step % every == 0 || step == steps || !std::isnan(evalLoss)))
      onStep(r);
    if (figures)
      *figures = r;
    return "";
  }

  /// "step N: the loss is NaN" and where it came from, or "" when finite.
  static std::string nonFinite(int64_t step, double loss,
                               const std::string &origin) {
    if (std::isfinite(loss))
      return "";
    return "step " + std::to_string(step) + ": the loss is " +
           (std::isnan(loss) ? "NaN" : "infinite") +
           (origin.empty()
                ? std::string(" (run with a trace to find the first op that "
                              "produced it)")
                : "; the first op to produce a NaN or an infinity was '" +
                      origin + "'");
  }

private:
  std::ofstream metrics;
  std::string path;
  int64_t every = 1;
  std::function<void(const StepFigures &)> onStep;
  Clock::time_point start = Clock::now();
};

} // namespace whale

#endif
