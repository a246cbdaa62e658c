//===- Train.cpp - running a train block ----------------------------------===//

#include "whale/Train.h"

#include "dialects/Whale/IR/TrainAttrs.h"
#include "dialects/Whale/IR/WhaleOps.h"
#include "lib/compile/DataSpec.h"
#include "lib/compile/Jit.h"
#include "lib/compile/LrSchedule.h"
#include "lib/compile/ModelLookup.h"
#include "lib/train/JobImpl.h"
#include "lib/train/LoopSetup.h"
#include "lib/train/PlannedRun.h"
#include "lowering/Passes.h"
#include "runtime/WhaleRuntime.h"
#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/checkpoint/CheckpointSet.h"
#include "runtime/data/DataOrder.h"
#include "runtime/data/TextDataset.h"
#include "runtime/run/TrainLoop.h"
#include "runtime/store/Safetensors.h"
#include "support/OutputFile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <cstring>
#include <memory>

namespace whale {
namespace {

/// A run on one device: a Job's step, its forward pass for the held-out
/// loss, and its checkpoint.
class OneDeviceRun : public TrainLoop {
public:
  OneDeviceRun(Job &job, Job::Impl &j, DataSource *evalSource,
               const std::string &savePath,
               const std::function<void(const std::string &)> &phase)
      : job(job), j(j), evalSource(evalSource), savePath(savePath),
        phase(phase) {}

private:
  StepEnd runStep(int64_t, double, int64_t) override {
    StepEnd end;
    end.error = j.runStep(j.inputs.data(), j.last.elapsedSeconds);
    end.loss = j.last.loss;
    return end;
  }
  std::string evaluate(double &loss) override {
    return j.evaluate(*evalSource, j.settings.evalSteps, loss);
  }
  std::string save(int64_t, bool) override {
    phase("saving the checkpoint to " + savePath);
    std::string error;
    const bool saved = job.save(savePath, error);
    phase("");
    return saved ? "" : error;
  }
  std::vector<int64_t> replicaRows() const override { return {j.batch}; }

  Job &job;
  Job::Impl &j;
  DataSource *evalSource;
  const std::string &savePath;
  const std::function<void(const std::string &)> &phase;
};

} // namespace

TrainLoop::Setup loopSetup(const TrainOptions &options,
                           const TrainSettings &settings, int64_t globalBatch) {
  TrainLoop::Setup setup;
  setup.settings = settings;
  setup.globalBatch = globalBatch;
  setup.savePath = options.savePath;
  setup.metricsPath = options.metricsPath;
  setup.samplesPath = options.samplesPath;
  if (options.onStep)
    setup.onStep = [onStep = options.onStep](const StepFigures &f) {
      onStep(StepReport{f.step, f.steps, f.loss, f.samplesPerSecond,
                        f.elapsedSeconds, f.learningRate, f.evalLoss});
    };
  return setup;
}

TrainResult train(Interpreter &interp, const TrainOptions &options) {
  TrainResult result;
  auto fail = [&](std::string msg) {
    result.ok = false;
    result.error = std::move(msg);
    return result;
  };
  // Where the run will write, checked before it starts rather than after:
  // never over a file it reads (issue 92 item 1).
  for (auto [path, what] : {std::pair{options.tracePath, "the trace"},
                            std::pair{options.metricsPath, "metrics"}})
    if (!path.empty())
      if (std::string err = rt::checkOutputPath(path, what); !err.empty())
        return fail(err);
  if (std::string err =
          checkOutputsAgainstInputs({{"--metrics", options.metricsPath},
                                     {"--trace", options.tracePath},
                                     {"--log-samples", options.samplesPath},
                                     {"--save", options.savePath}},
                                    filesTrainReads(interp, options));
      !err.empty())
    return fail(err);
  if (!options.savePath.empty())
    if (std::string err = checkSaveDestination(options.savePath); !err.empty())
      return fail(err);
  if (!options.controlPath.empty())
    if (std::string err = deviceControlFile(options.controlPath).checkAtStart();
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
  jobOptions.ampStorage = options.ampStorage;
  std::string error;
  const std::function<void(const std::string &)> phase =
      [&](const std::string &what) {
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

  OneDeviceRun run(*job, j, evalSource.get(), options.savePath, phase);
  if (!TrainLoop::intoResult(run.run(loopSetup(options, settings, batch), first,
                                     *source, j.inputs),
                             result))
    return result;
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
