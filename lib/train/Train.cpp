//===- Train.cpp - running a train block ----------------------------------===//

#include "whale/Train.h"

#include "dialects/Whale/IR/TrainAttrs.h"
#include "dialects/Whale/IR/WhaleOps.h"
#include "lib/compile/DataSpec.h"
#include "lib/compile/Jit.h"
#include "lib/compile/LrSchedule.h"
#include "lib/compile/ModelLookup.h"
#include "lib/train/HostData.h"
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

/// The loop's figures of a step as the API reports them.
static StepReport reportOf(const StepFigures &f) {
  return StepReport{
      f.step,           f.steps,        f.loss,    f.samplesPerSecond,
      f.elapsedSeconds, f.learningRate, f.evalLoss};
}

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
      onStep(reportOf(f));
    };
  return setup;
}

/// Tracing times every op and watches for the first NaN or infinity; the
/// trace is written however the run ends, and a failure to write it fails
/// a run that otherwise worked.
struct OneDeviceTrace {
  whale_rt_context *ctx = nullptr;
  std::string path;
  std::string write() {
    std::string p = std::move(path);
    path.clear();
    if (ctx && !p.empty() &&
        whale_rt_write_trace(ctx, p.c_str()) != WHALE_RT_OK)
      return whale_rt_last_error(ctx);
    return "";
  }
  ~OneDeviceTrace() { write(); }
};

struct Training::Impl {
  Impl(Interpreter &interp, TrainOptions options)
      : interp(interp), options(std::move(options)) {}

  /// Everything before the first step; "" or what fails the run.
  std::string start();
  std::string startOneDevice();
  /// On one device: the job's parameters now.
  std::string jobParameters(std::map<std::string, std::vector<float>> &out) {
    return readParameters(job->impl->ctx.get(), job->impl->params, out);
  }

  Interpreter &interp;
  TrainOptions options;
  TrainResult result;
  std::string startError;
  bool finished = false;
  TrainLoop *loop = nullptr;
  std::function<void(const std::string &)> phase;

  // On one device: a Job that the data source feeds.
  std::unique_ptr<Job> job;
  std::unique_ptr<DataSource> source, evalSource;
  std::unique_ptr<OneDeviceTrace> trace;
  std::unique_ptr<OneDeviceRun> oneDevice;
  TrainLoop::Setup setup;

  // Under a plan.
  std::unique_ptr<PlannedRun> planned;
};

std::string Training::Impl::start() {
  phase = [this](const std::string &what) {
    if (options.onPhase)
      options.onPhase(what);
  };
  // Where the run will write, checked before it starts rather than after:
  // never over a file it reads (issue 92 item 1).
  for (auto [path, what] : {std::pair{options.tracePath, "the trace"},
                            std::pair{options.metricsPath, "metrics"}})
    if (!path.empty())
      if (std::string err = rt::checkOutputPath(path, what); !err.empty())
        return err;
  if (std::string err =
          checkOutputsAgainstInputs({{"--metrics", options.metricsPath},
                                     {"--trace", options.tracePath},
                                     {"--log-samples", options.samplesPath},
                                     {"--save", options.savePath}},
                                    filesTrainReads(interp, options));
      !err.empty())
    return err;
  if (!options.savePath.empty())
    if (std::string err = checkSaveDestination(options.savePath); !err.empty())
      return err;
  if (!options.controlPath.empty())
    if (std::string err = deviceControlFile(options.controlPath).checkAtStart();
        !err.empty())
      return err;
  if (options.cluster.empty())
    return startOneDevice();
  planned = std::make_unique<PlannedRun>(interp, options, result);
  if (std::string err = planned->start(); !err.empty())
    return err;
  loop = planned.get();
  if (!planned->beginSteps())
    return planned->end().error;
  return "";
}

std::string Training::Impl::startOneDevice() {
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
  phase("compiling the train step");
  job = Job::create(interp, jobOptions, error);
  phase("");
  if (!job)
    return error;
  Job::Impl &j = *job->impl;
  const TrainSettings &settings = j.settings;
  mlir::func::FuncOp model = findModel(*j.own, j.model, true, error);
  if (!model)
    return error;

  // The data, and the held-out data when the block evaluates.
  if (!(source = runDataSource(model, options, error)))
    return error;
  if (settings.evalEvery > 0 &&
      !(evalSource = makeDataSource(model, error, "eval_data")))
    return error;

  if (!options.loadPath.empty()) {
    if (!job->load(options.loadPath, error))
      return error;
    if (std::string err =
            checkResumable(options.loadPath, j.done, settings.steps);
        !err.empty())
      return err;
  }
  trace = std::make_unique<OneDeviceTrace>();
  trace->ctx = j.ctx.get();
  trace->path = options.tracePath;
  if (!options.tracePath.empty())
    whale_rt_enable_trace(j.ctx.get());

  oneDevice = std::make_unique<OneDeviceRun>(*job, j, evalSource.get(),
                                             options.savePath, phase);
  loop = oneDevice.get();
  setup = loopSetup(options, settings, j.batch);
  if (!loop->begin(setup, j.done, *source, j.inputs))
    return loop->end().error;
  return "";
}

Training::Training(Interpreter &interp, TrainOptions options)
    : impl(std::make_unique<Impl>(interp, std::move(options))) {
  impl->startError = impl->start();
  if (impl->startError.empty() && !impl->loop)
    impl->startError = "the run did not start";
}

Training::~Training() = default;

bool Training::next(StepReport &report) {
  if (!impl->startError.empty() || impl->finished)
    return false;
  StepFigures f;
  if (!impl->loop->next(&f))
    return false;
  report = reportOf(f);
  return true;
}

void Training::stop() {
  if (impl->loop)
    impl->loop->requestStop();
}

int64_t Training::stepsDone() const {
  return impl->loop ? impl->loop->stepsDone() : 0;
}

bool Training::save(const std::string &path, std::string &error) {
  if (!impl->startError.empty()) {
    error = "the run did not start: " + impl->startError;
    return false;
  }
  if (std::string err = checkSaveDestination(path); !err.empty()) {
    error = err;
    return false;
  }
  if (impl->planned) {
    error = impl->planned->saveNow(path);
    return error.empty();
  }
  return impl->job->save(path, error);
}

bool Training::parameters(std::vector<TensorInfo> &info,
                          std::vector<std::vector<float>> &values,
                          std::string &error) {
  if (!impl->startError.empty()) {
    error = "the run did not start: " + impl->startError;
    return false;
  }
  std::map<std::string, std::vector<float>> byName;
  info = parameterInfo();
  error = impl->planned ? impl->planned->hostParameters(byName)
                        : impl->jobParameters(byName);
  if (!error.empty())
    return false;
  values.clear();
  for (const TensorInfo &t : info)
    values.push_back(std::move(byName[t.name]));
  return true;
}

std::vector<TensorInfo> Training::parameterInfo() const {
  std::vector<TensorInfo> info;
  if (!impl->startError.empty())
    return info;
  if (impl->planned) {
    for (const Parameter &p : impl->planned->parameterList())
      info.push_back(TensorInfo{p.name, "f32", p.shape});
    return info;
  }
  return impl->job->parameters();
}

bool Training::writeParameters(const std::vector<ParameterValues> &values,
                               std::string &error) {
  if (!impl->startError.empty()) {
    error = "the run did not start: " + impl->startError;
    return false;
  }
  if (impl->planned) {
    error = impl->planned->setParameters(values);
    return error.empty();
  }
  for (const ParameterValues &v : values)
    if (!impl->job->writeParameter(v.name, v.values, v.count, error))
      return false;
  return true;
}

TrainResult Training::finish() {
  Impl &i = *impl;
  TrainResult &result = i.result;
  auto fail = [&](std::string msg) {
    result.ok = false;
    result.error = std::move(msg);
    return std::move(result);
  };
  if (i.finished)
    return fail("the run's result was taken before");
  i.finished = true;
  if (!i.startError.empty())
    return fail(i.startError);
  if (!TrainLoop::intoResult(i.loop->end(), result))
    return std::move(result);
  if (i.planned) {
    if (std::string err = i.planned->finish(); !err.empty())
      return fail(err);
  } else {
    if (i.options.keepParameters)
      if (std::string err = i.jobParameters(result.parameters); !err.empty())
        return fail(err);
    if (std::string err = i.trace->write(); !err.empty())
      return fail(err);
  }
  result.ok = true;
  return std::move(result);
}

TrainResult train(Interpreter &interp, const TrainOptions &options) {
  Training run(interp, options);
  StepReport report;
  while (run.next(report)) {
  }
  return run.finish();
}

TrainResult trainParallel(Interpreter &interp, const TrainOptions &options) {
  if (options.cluster.empty()) {
    TrainResult result;
    result.error = "trainParallel needs a cluster";
    return result;
  }
  return train(interp, options);
}

} // namespace whale
