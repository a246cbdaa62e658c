//===- TrainLoop.cpp - the one loop every training run steps through ------===//

#include "runtime/run/TrainLoop.h"

#include "runtime/run/DataSource.h"
#include "runtime/run/Interrupt.h"

#include <limits>

namespace whale {

bool TrainLoop::stopAsked() {
  return interruptRequested() || hostStopRequested();
}

std::string TrainLoop::openLogs(bool resuming) {
  if (!reports())
    return "";
  if (std::string err = log.open(setup->metricsPath, setup->onStep, resuming,
                                 setup->settings.logEvery);
      !err.empty())
    return err;
  return samples.open(setup->samplesPath, resuming);
}

std::string TrainLoop::startReporting() { return openLogs(/*resuming=*/true); }

void TrainLoop::stopBefore(int64_t step) {
  // The steps done since the last save are kept where a save path was
  // given: a scheduler's SIGTERM loses nothing finished.
  const std::string &path = setup->savePath;
  outcome.ok = false;
  if (path.empty() || step == first || step == saved) {
    outcome.stopped = true;
    outcome.error =
        interruptedAfter(step, step == saved && step > first ? path : "");
    return;
  }
  if (std::string err = save(step, /*last=*/false); !err.empty()) {
    outcome.error = interruptedAfter(step) + "; saving failed: " + err;
    return;
  }
  outcome.stopped = true;
  outcome.error = interruptedAfter(step, path);
}

bool TrainLoop::begin(const Setup &s, int64_t firstStep, DataSource &source,
                      std::vector<whale_rt_tensor *> &inputs) {
  setup = &s;
  this->source = &source;
  this->inputs = &inputs;
  first = firstStep;
  nextStep = firstStep;
  saved = -1;
  over = false;
  outcome = Outcome();
  outcome.firstStep = first + 1;
  if (std::string err = openLogs(first > 0); !err.empty())
    return fail(std::move(err));
  return true;
}

bool TrainLoop::fail(std::string message) {
  outcome.ok = false;
  outcome.error = std::move(message);
  over = true;
  return false;
}

bool TrainLoop::next(StepFigures *figures) {
  if (over)
    return false;
  auto stepName = [](int64_t step) { return "step " + std::to_string(step); };
  const Setup &s = *setup;
  const TrainSettings &settings = s.settings;
  const int64_t steps = settings.steps;
  // A recovery: the run goes on after the `after`-th step, whose state it
  // restored; the losses of the steps since are dropped (they run again).
  auto resume = [&](int64_t after) {
    outcome.losses.resize(static_cast<size_t>(after - first));
    nextStep = after;
  };
  while (nextStep < steps) {
    const int64_t step = nextStep;
    if (stopAsked()) {
      stopBefore(step);
      over = true;
      return false;
    }
    if (std::string err = beforeStep(step); !err.empty())
      return fail(std::move(err));
    StepLog::Clock::time_point t0 = StepLog::Clock::now();
    const int64_t t0Ns = whale_rt_now_ns();
    if (std::string err = source->fill(step, *inputs); !err.empty()) {
      if (!source->endsRun())
        return fail(stepName(step + 1) + ": " + err);
      stopBefore(step);
      over = true;
      return false;
    }
    const double dataSeconds =
        std::chrono::duration<double>(StepLog::Clock::now() - t0).count();
    if (!s.samplesPath.empty() && reports())
      if (std::string err =
              samples.write(step + 1, source->samples(step), replicaRows());
          !err.empty())
        return fail(std::move(err));
    const double factor = settings.lrFactor(step);
    StepEnd end = runStep(step, factor, t0Ns);
    if (end.resumedAfter >= 0) {
      resume(end.resumedAfter);
      continue;
    }
    if (!end.error.empty())
      return fail(std::move(end.error));
    outcome.losses.push_back(end.loss);
    double evalLoss = std::numeric_limits<double>::quiet_NaN();
    if (settings.evaluatesAfter(step + 1)) {
      if (std::string err = evaluate(evalLoss); !err.empty())
        return fail(stepName(step + 1) + ": " + err);
      outcome.evalLosses.push_back({step + 1, evalLoss});
    }
    StepFigures f{step + 1, steps, end.loss, 0, 0, settings.baseLr * factor,
                  evalLoss};
    if (reports()) {
      if (std::string err =
              log.report(step + 1, steps, end.loss, s.globalBatch, t0,
                         settings.baseLr * factor, evalLoss, dataSeconds, &f);
          !err.empty())
        return fail(std::move(err));
    }
    if (!s.savePath.empty() && settings.savesAfter(step + 1)) {
      if (std::string err = save(step + 1, /*last=*/false); !err.empty())
        return fail("saving after " + stepName(step + 1) + ": " + err);
      saved = step + 1;
    }
    nextStep = step + 1;
    StepEnd after = afterStep(step + 1);
    if (after.resumedAfter >= 0) {
      resume(after.resumedAfter);
      continue;
    }
    if (!after.error.empty())
      return fail(std::move(after.error));
    if (figures)
      *figures = f;
    return true;
  }
  if (!s.savePath.empty())
    if (std::string err = save(steps, /*last=*/true); !err.empty())
      return fail(std::move(err));
  outcome.ok = true;
  over = true;
  return false;
}

TrainLoop::Outcome TrainLoop::end() {
  if (!over) {
    // Ended by the host before its last step: as a stop asked.
    stopBefore(nextStep);
    over = true;
  }
  return std::move(outcome);
}

TrainLoop::Outcome TrainLoop::run(const Setup &s, int64_t firstStep,
                                  DataSource &source,
                                  std::vector<whale_rt_tensor *> &inputs) {
  if (begin(s, firstStep, source, inputs))
    while (next(nullptr)) {
    }
  return end();
}

} // namespace whale
