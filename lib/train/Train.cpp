//===- Train.cpp - running a train block ----------------------------------===//

#include "whale/Train.h"

#include "dialects/Whale/IR/TrainAttrs.h"
#include "dialects/Whale/IR/WhaleOps.h"
#include "lib/compile/DataSpec.h"
#include "lib/compile/Jit.h"
#include "lib/compile/LrSchedule.h"
#include "lib/compile/ModelLookup.h"
#include "lib/elastic/ControlFile.h"
#include "lib/train/Interrupt.h"
#include "lib/train/JobImpl.h"
#include "lib/train/SampleLog.h"
#include "lowering/Passes.h"
#include "runtime/WhaleRuntime.h"
#include "runtime/data/DataOrder.h"
#include "runtime/data/TextDataset.h"
#include "runtime/exec/Checkpoint.h"
#include "runtime/exec/StepLog.h"
#include "runtime/store/CheckpointSet.h"
#include "runtime/store/Safetensors.h"
#include "support/OutputFile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <thread>

namespace whale {
namespace {

using Clock = std::chrono::steady_clock;

} // namespace

TrainResult train(Interpreter &interp, const TrainOptions &options) {
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
  // Where the run will write, checked before it starts rather than after.
  for (auto [path, what] : {std::pair{options.tracePath, "the trace"},
                            std::pair{options.metricsPath, "metrics"}})
    if (!path.empty())
      if (std::string err = rt::checkOutputPath(path, what); !err.empty())
        return fail(err);
  // A checkpoint folder is replaced whole at each save: never one that
  // holds anything else.
  if (!options.savePath.empty())
    if (std::string err =
            isSingleFilePath(options.savePath)
                ? rt::checkOutputPath(options.savePath, "the checkpoint")
                : rt::checkReplaceableFolder(options.savePath);
        !err.empty())
      return fail("--save: " + err);
  if (!options.controlPath.empty())
    if (std::string err = ControlFile(options.controlPath).checkAtStart();
        !err.empty())
      return fail(err);
  if (!options.cluster.empty())
    return trainParallel(interp, options);
  // The model's train step, compiled, with its parameters made: a Job that
  // the script's data source feeds.
  JobOptions jobOptions;
  jobOptions.model = options.model;
  jobOptions.steps = options.steps;
  jobOptions.seed = options.seed;
  jobOptions.threads = options.threads;
  jobOptions.fuse = options.fuse;
  std::string error;
  auto phase = [&](const std::string &what) {
    if (options.onPhase)
      options.onPhase(what);
  };
  phase("compiling the train step");
  std::unique_ptr<Job> job = Job::create(interp, jobOptions, error);
  phase("");
  if (!job)
    return fail(error);
  Job::Impl &j = *job->impl;
  const TrainSettings &settings = j.settings;
  const int64_t steps = settings.steps, batch = j.batch;
  mlir::func::FuncOp model = findModel(*j.own, j.model, true, error);
  if (!model)
    return fail(error);

  // The data, and the held-out data when the block evaluates.
  std::unique_ptr<DataSource> source = makeDataSource(model, error);
  if (!source)
    return fail(error);
  std::unique_ptr<DataSource> evalSource;
  if (settings.evalEvery > 0 &&
      !(evalSource = makeDataSource(model, error, "eval_data")))
    return fail(error);

  if (!options.loadPath.empty()) {
    if (!job->load(options.loadPath, error))
      return fail(error);
    if (std::string err = checkResumable(options.loadPath, j.done, steps);
        !err.empty())
      return fail(err);
  }
  const int64_t first = j.done;
  whale_rt_context *ctx = j.ctx.get();

  StepLog log;
  if (std::string err = log.open(options, first > 0, settings.logEvery);
      !err.empty())
    return fail(err);
  SampleLog samples;
  if (std::string err = samples.open(options.samplesPath, first > 0);
      !err.empty())
    return fail(err);

  // Tracing times every op and watches for the first NaN or infinity; the
  // trace is written however the run ends, and a failure to write it
  // fails a run that otherwise worked.
  struct TraceWriter {
    whale_rt_context *ctx;
    std::string path;
    std::string write() {
      std::string p = std::move(path);
      path.clear();
      if (!p.empty() && whale_rt_write_trace(ctx, p.c_str()) != WHALE_RT_OK)
        return whale_rt_last_error(ctx);
      return "";
    }
    ~TraceWriter() { write(); }
  } traceWriter{ctx, options.tracePath};
  if (!options.tracePath.empty())
    whale_rt_enable_trace(ctx);

  result.firstStep = first + 1;
  int64_t lastSaved = -1;
  for (int64_t s = first; s < steps; ++s) {
    if (interruptRequested()) {
      // The steps done since the last save are kept where --save was
      // given: a scheduler's SIGTERM loses nothing finished.
      if (options.savePath.empty() || s == first || s == lastSaved)
        return stopAt(interruptedAfter(s, s == lastSaved && s > first
                                            ? options.savePath
                                            : ""));
      phase("saving the checkpoint to " + options.savePath);
      if (!job->save(options.savePath, error))
        return fail(interruptedAfter(s) + "; saving failed: " + error);
      return stopAt(interruptedAfter(s, options.savePath));
    }
    StepLog::Clock::time_point t0 = StepLog::Clock::now();
    if (std::string err = source->fill(s, j.inputs); !err.empty())
      return fail("step " + std::to_string(s + 1) + ": " + err);
    if (std::string err = samples.write(s + 1, source->samples(s), {batch});
        !err.empty())
      return fail(err);
    if (std::string err = j.runStep(j.inputs.data(), j.last.elapsedSeconds);
        !err.empty())
      return fail(err);
    result.losses.push_back(j.last.loss);
    double evalLoss = std::numeric_limits<double>::quiet_NaN();
    if (settings.evaluatesAfter(s + 1)) {
      if (std::string err =
              j.evaluate(*evalSource, settings.evalSteps, evalLoss);
          !err.empty())
        return fail("step " + std::to_string(s + 1) + ": " + err);
      result.evalLosses.push_back({s + 1, evalLoss});
    }
    if (std::string err =
            log.report(s + 1, steps, j.last.loss, batch, t0,
                       settings.baseLr * settings.lrFactor(s), evalLoss);
        !err.empty())
      return fail(err);
    if (!options.savePath.empty() && settings.savesAfter(s + 1)) {
      phase("saving the checkpoint to " + options.savePath);
      if (!job->save(options.savePath, error))
        return fail("saving after step " + std::to_string(s + 1) + ": " +
                    error);
      lastSaved = s + 1;
      phase("");
    }
  }

  if (!options.savePath.empty()) {
    phase("saving the checkpoint to " + options.savePath);
    if (!job->save(options.savePath, error))
      return fail(error);
    phase("");
  }
  if (options.keepParameters)
    if (std::string err = readParameters(ctx, j.params, result.parameters);
        !err.empty())
      return fail(err);
  if (std::string err = traceWriter.write(); !err.empty())
    return fail(err);
  result.ok = true;
  return result;
}

} // namespace whale
