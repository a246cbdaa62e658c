//===- Train.cpp - running a train block ----------------------------------===//

#include "whale/Train.h"

#include "dialects/Whale/IR/TrainAttrs.h"
#include "dialects/Whale/IR/WhaleOps.h"
#include "lib/Checkpoint.h"
#include "lib/DataSource.h"
#include "lib/Interrupt.h"
#include "lib/Jit.h"
#include "lib/LrSchedule.h"
#include "lib/ModelLookup.h"
#include "lib/OutputFile.h"
#include "lib/StepLog.h"
#include "lowering/Passes.h"
#include "runtime/WhaleRuntime.h"
#include "runtime/data/DataOrder.h"
#include "runtime/data/TextDataset.h"
#include "runtime/store/Safetensors.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
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
  // Where the run will write, checked before it starts rather than after.
  for (auto [path, what] : {std::pair{options.tracePath, "the trace"},
                            std::pair{options.metricsPath, "metrics"}})
    if (!path.empty())
      if (std::string err = checkOutputPath(path, what); !err.empty())
        return fail(err);
  if (!options.cluster.empty())
    return trainParallel(interp, options);
  // The model to train and its train block.
  std::string lookupError;
  mlir::func::FuncOp model =
      findModel(interp, options.model, /*needsTrainBlock=*/true, lookupError);
  if (!model)
    return fail(lookupError);
  mlir::ModuleOp loaded = interp.module();
  auto trainBlock = model->getAttrOfType<mlir::DictionaryAttr>("whale.train");
  auto data = trainBlock.getAs<mlir::DictionaryAttr>("data");
  TrainSettings settings =
      trainSettings(trainBlock, options.steps, options.seed);
  const int64_t steps = settings.steps;
  const uint64_t seed = settings.seed;
  const int stateCount = settings.stateCount;
  std::string name = model.getName().str();

  // Compile the train step (a copy: the interpreter's module stays as is).
  mlir::OwningOpRef<mlir::ModuleOp> module = loaded.clone();
  {
    mlir::PassManager pm(&interp.context());
    pm.addPass(createWhaleAutodiff());
    pm.addPass(createWhaleTrainStep());
    if (mlir::failed(pm.run(*module)))
      return fail("building the train step failed");
  }
  std::vector<Parameter> params;
  auto gradFn = module->lookupSymbol<mlir::func::FuncOp>(name + "_grad");
  auto names = gradFn->getAttrOfType<mlir::ArrayAttr>("whale.gradients");
  for (auto [i, n] : llvm::enumerate(names)) {
    auto type =
        mlir::cast<mlir::RankedTensorType>(gradFn.getResultTypes()[i + 1]);
    params.push_back({mlir::cast<mlir::StringAttr>(n).str(),
                      std::vector<int64_t>(type.getShape())});
  }
  std::string error;
  std::unique_ptr<JitProgram> program = JitProgram::compile(*module, error);
  if (!program)
    return fail("compiling the train step failed: " + error);
  JitProgram::Entry step = program->lookup(name + "_train");
  if (!step)
    return fail("no train step for '" + name + "'");

  // The device, and the model's inputs.
  int threads =
      options.threads > 0
          ? options.threads
          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::unique_ptr<whale_rt_context, void (*)(whale_rt_context *)> ctx(
      whale_rt_context_create("cpu:0", threads, 0, seed),
      whale_rt_context_destroy);
  if (ampBf16(model))
    whale_rt_set_amp(ctx.get(), WHALE_RT_AMP_BF16);
  std::vector<whale_rt_tensor *> inputs;
  for (mlir::Type t : model.getArgumentTypes()) {
    whale_rt_tensor *tensor =
        newTensor(ctx.get(), mlir::cast<mlir::RankedTensorType>(t), error);
    if (!tensor)
      return fail(error);
    inputs.push_back(tensor);
  }

  // The data.
  std::string dataError;
  std::unique_ptr<DataSource> source = makeDataSource(model, dataError);
  if (!source)
    return fail(dataError);
  int64_t batch = static_cast<int64_t>(number(data, "batch", 1));
  if (std::string err = settings.checkLength(batch); !err.empty())
    return fail(err);

  int64_t first = 0;
  if (!options.loadPath.empty()) {
    std::string err = loadCheckpoint(ctx.get(), options.loadPath, name, params,
                                     stateCount, first);
    if (err.empty())
      err = checkResumable(options.loadPath, first, steps);
    if (!err.empty())
      return fail(err);
  }

  StepLog log;
  if (std::string err = log.open(options, first > 0, settings.logEvery);
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
  } traceWriter{ctx.get(), options.tracePath};
  if (!options.tracePath.empty())
    whale_rt_enable_trace(ctx.get());

  result.firstStep = first + 1;
  for (int64_t s = first; s < steps; ++s) {
    if (interruptRequested())
      return fail(interruptedAfter(s));
    StepLog::Clock::time_point t0 = StepLog::Clock::now();
    source->fill(s, inputs);
    whale_rt_set_train_state(ctx.get(), s + 1,
                             settings.lrFactor(s));
    whale_rt_tensor *loss = nullptr;
    if (step(ctx.get(), inputs.data(), &loss) != WHALE_RT_OK)
      return fail("step " + std::to_string(s + 1) + ": " +
                  whale_rt_last_error(ctx.get()));
    double value = *static_cast<float *>(whale_rt_tensor_data(loss));
    whale_rt_tensor_release(ctx.get(), loss);
    if (std::string err = StepLog::nonFinite(
            s + 1, value, whale_rt_first_nonfinite(ctx.get()));
        !err.empty())
      return fail(err);
    result.losses.push_back(value);
    if (std::string err = log.report(s + 1, steps, value, batch, t0);
        !err.empty())
      return fail(err);
    if (!options.savePath.empty() && settings.savesAfter(s + 1))
      if (std::string err = saveCheckpoint(ctx.get(), options.savePath, name,
                                           s + 1, seed, params, stateCount);
          !err.empty())
        return fail("saving after step " + std::to_string(s + 1) + ": " + err);
  }

  if (!options.savePath.empty()) {
    std::string err = saveCheckpoint(ctx.get(), options.savePath, name, steps,
                                     seed, params, stateCount);
    if (!err.empty())
      return fail(err);
  }
  if (options.keepParameters)
    if (std::string err = readParameters(ctx.get(), params, result.parameters);
        !err.empty())
      return fail(err);
  if (std::string err = traceWriter.write(); !err.empty())
    return fail(err);
  result.ok = true;
  return result;
}

} // namespace whale
