//===- Train.cpp - running a train block ----------------------------------===//

#include "whale/Train.h"

#include "dialects/Whale/IR/WhaleOps.h"
#include "lib/Checkpoint.h"
#include "lib/Jit.h"
#include "lib/ModelLookup.h"
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

double number(mlir::DictionaryAttr d, llvm::StringRef key, double dflt) {
  if (!d)
    return dflt;
  if (auto f = d.getAs<mlir::FloatAttr>(key))
    return f.getValueAsDouble();
  if (auto i = d.getAs<mlir::IntegerAttr>(key))
    return static_cast<double>(i.getInt());
  return dflt;
}

std::string text(mlir::DictionaryAttr d, llvm::StringRef key) {
  auto s = d ? d.getAs<mlir::StringAttr>(key) : mlir::StringAttr();
  return s ? s.str() : std::string();
}

/// The factor the learning-rate schedule applies at `step` (0-based).
double scheduleFactor(mlir::DictionaryAttr schedule, double lr, int64_t step,
                      int64_t steps) {
  if (text(schedule, "kind") != "cosine")
    return 1.0;
  double warmup = number(schedule, "warmup", 0);
  if (step < warmup)
    return (step + 1) / warmup;
  double floor = lr > 0 ? number(schedule, "min_lr", 0) / lr : 0;
  double span = std::max(1.0, steps - warmup);
  double progress = std::min(1.0, (step - warmup) / span);
  return floor + (1 - floor) * 0.5 * (1 + std::cos(M_PI * progress));
}

/// A uniform number in [-1, 1) from (key, index): synthetic data is a pure
/// function of the seed and the sample, like every data order here.
float uniform(uint64_t key, uint64_t index) {
  return static_cast<float>((rt::streamValue(key, index) >> 11) * 0x1.0p-52 -
                            1.0);
}

/// Feeds one step's global batch into the model's input tensors.
class DataSource {
public:
  virtual ~DataSource() = default;
  virtual void fill(int64_t step, std::vector<whale_rt_tensor *> &inputs) = 0;
};

/// A relative data path names a file beside the script, so a script runs the
/// same from any working folder; a script given as a string (no file) keeps
/// the path as written.
std::string scriptRelative(mlir::func::FuncOp model, const std::string &path) {
  if (path.empty() || llvm::sys::path::is_absolute(path))
    return path;
  auto loc = mlir::dyn_cast<mlir::FileLineColLoc>(model.getLoc());
  if (!loc)
    return path;
  llvm::StringRef script = loc.getFilename().getValue();
  llvm::StringRef folder = llvm::sys::path::parent_path(script);
  if (folder.empty() || !llvm::sys::fs::exists(script))
    return path;
  llvm::SmallString<256> full(folder);
  llvm::sys::path::append(full, path);
  return full.str().str();
}

/// Bytes of text: inputs [B, T] and targets [B, T] shifted by one.
class TextSource : public DataSource {
public:
  TextSource(rt::TextDataset ds, uint64_t seed, int64_t batch)
      : ds(std::move(ds)), order(seed, this->ds.numSamples()), batch(batch) {}
  void fill(int64_t step, std::vector<whale_rt_tensor *> &inputs) override {
    std::vector<int64_t> samples = order.slice(step, batch, 0, batch);
    int64_t seq = ds.seqLength();
    auto *in = static_cast<int32_t *>(whale_rt_tensor_data(inputs[0]));
    auto *tg = static_cast<int32_t *>(whale_rt_tensor_data(inputs[1]));
    for (int64_t b = 0; b < batch; ++b)
      ds.sample(samples[b], in + b * seq, tg + b * seq);
  }

private:
  rt::TextDataset ds;
  rt::DataOrder order;
  int64_t batch;
};

/// A task with a known solution: features uniform in [-1, 1], labels the
/// argmax of a fixed random linear teacher over the classes of the cross
/// entropy that reads them. Sample i is the same for every plan and run.
class SyntheticSource : public DataSource {
public:
  SyntheticSource(uint64_t seed, int64_t batch, int64_t features,
                  int64_t classes)
      : key(rt::mix64(seed ^ 0x5EED)), teacherKey(rt::mix64(seed ^ 0x7EAC4E2)),
        batch(batch), features(features), classes(classes) {}
  void fill(int64_t step, std::vector<whale_rt_tensor *> &inputs) override {
    auto *x = static_cast<float *>(whale_rt_tensor_data(inputs[0]));
    auto *y = static_cast<int32_t *>(whale_rt_tensor_data(inputs[1]));
    for (int64_t b = 0; b < batch; ++b) {
      uint64_t sample = static_cast<uint64_t>(step * batch + b);
      float *row = x + b * features;
      for (int64_t j = 0; j < features; ++j)
        row[j] = uniform(key, sample * features + j);
      int32_t best = 0;
      float bestScore = -1e30f;
      for (int64_t c = 0; c < classes; ++c) {
        float score = 0;
        for (int64_t j = 0; j < features; ++j)
          score += row[j] * uniform(teacherKey, j * classes + c);
        if (score > bestScore) {
          bestScore = score;
          best = static_cast<int32_t>(c);
        }
      }
      y[b] = best;
    }
  }

private:
  uint64_t key, teacherKey;
  int64_t batch, features, classes;
};

} // namespace

TrainResult train(Interpreter &interp, const TrainOptions &options) {
  TrainResult result;
  auto fail = [&](std::string msg) {
    result.ok = false;
    result.error = std::move(msg);
    return result;
  };
  // The model to train and its train block.
  std::string lookupError;
  mlir::func::FuncOp model =
      findModel(interp, options.model, /*needsTrainBlock=*/true, lookupError);
  if (!model)
    return fail(lookupError);
  mlir::ModuleOp loaded = interp.module();
  auto trainBlock = model->getAttrOfType<mlir::DictionaryAttr>("whale.train");
  auto data = trainBlock.getAs<mlir::DictionaryAttr>("data");
  auto optimizer = trainBlock.getAs<mlir::DictionaryAttr>("optimizer");
  auto schedule = trainBlock.getAs<mlir::DictionaryAttr>("lr_schedule");
  int64_t steps = options.steps
                      ? *options.steps
                      : static_cast<int64_t>(number(trainBlock, "steps", 1));
  uint64_t seed = options.seed
                      ? *options.seed
                      : static_cast<uint64_t>(number(trainBlock, "seed", 0));
  double baseLr = number(optimizer, "lr", 1e-3);
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
  std::vector<whale_rt_tensor *> inputs;
  for (mlir::Type t : model.getArgumentTypes()) {
    auto type = mlir::cast<mlir::RankedTensorType>(t);
    mlir::Type e = type.getElementType();
    int32_t dtype = e.isF32()         ? WHALE_RT_F32
                    : e.isInteger(32) ? WHALE_RT_I32
                                      : -1;
    if (dtype < 0)
      return fail("inputs are f32 or i32 tensors for now");
    whale_rt_tensor *tensor = nullptr;
    if (whale_rt_tensor_create(ctx.get(), dtype, type.getRank(),
                               type.getShape().data(), &tensor) != WHALE_RT_OK)
      return fail(whale_rt_last_error(ctx.get()));
    inputs.push_back(tensor);
  }

  // The data.
  std::unique_ptr<DataSource> source;
  int64_t batch = static_cast<int64_t>(number(data, "batch", 1));
  uint64_t dataSeed = static_cast<uint64_t>(number(data, "seed", 0));
  auto argTypes = model.getArgumentTypes();
  if (text(data, "kind") == "text") {
    rt::TextDataset ds;
    rt::Status st =
        rt::TextDataset::open(scriptRelative(model, text(data, "path")),
                              static_cast<int64_t>(number(data, "seq", 1)), ds);
    if (!st)
      return fail(st.message());
    if (argTypes.size() != 2 || !llvm::all_of(argTypes, [](mlir::Type t) {
          return mlir::cast<mlir::RankedTensorType>(t)
              .getElementType()
              .isInteger(32);
        }))
      return fail("text(...) feeds two i32 inputs [B, T]: tokens and targets");
    source = std::make_unique<TextSource>(std::move(ds), dataSeed, batch);
  } else {
    // Features [B, F] and labels [B]; the classes are the width of the
    // logits the labels' cross entropy reads.
    int64_t classes = 0;
    if (argTypes.size() == 2)
      model.walk([&](CrossEntropyOp ce) {
        if (ce.getLabels() == model.getArgument(1))
          classes = ce.getLogits().getType().getShape().back();
      });
    auto x = mlir::cast<mlir::RankedTensorType>(argTypes.front());
    if (argTypes.size() != 2 || x.getRank() != 2 ||
        !x.getElementType().isF32() || classes == 0)
      return fail(
          "synthetic(...) feeds f32 features [B, F] and i32 class labels [B] "
          "read by a cross_entropy; this model's inputs do not fit");
    source = std::make_unique<SyntheticSource>(dataSeed, batch, x.getShape()[1],
                                               classes);
  }

  // Optimizer state kept per parameter: its count by optimizer.
  std::string opt = text(optimizer, "kind");
  int stateCount =
      opt == "sgd" ? (number(optimizer, "momentum", 0) > 0 ? 1 : 0) : 2;
  int64_t first = 0;
  if (!options.loadPath.empty()) {
    std::string err = loadCheckpoint(ctx.get(), options.loadPath, name, params,
                                     stateCount, first);
    if (!err.empty())
      return fail(err);
  }

  std::ofstream metrics;
  if (!options.metricsPath.empty()) {
    metrics.open(options.metricsPath, first ? std::ios::app : std::ios::trunc);
    if (!metrics)
      return fail("cannot write metrics to '" + options.metricsPath + "'");
  }

  // Tracing times every op and watches for the first NaN or infinity; the
  // trace is written however the run ends.
  struct TraceWriter {
    whale_rt_context *ctx;
    std::string path;
    ~TraceWriter() {
      if (!path.empty())
        whale_rt_write_trace(ctx, path.c_str());
    }
  } traceWriter{ctx.get(), options.tracePath};
  if (!options.tracePath.empty())
    whale_rt_enable_trace(ctx.get());

  result.firstStep = first + 1;
  Clock::time_point start = Clock::now();
  for (int64_t s = first; s < steps; ++s) {
    Clock::time_point t0 = Clock::now();
    source->fill(s, inputs);
    whale_rt_set_train_state(ctx.get(), s + 1,
                             scheduleFactor(schedule, baseLr, s, steps));
    whale_rt_tensor *loss = nullptr;
    if (step(ctx.get(), inputs.data(), &loss) != WHALE_RT_OK)
      return fail("step " + std::to_string(s + 1) + ": " +
                  whale_rt_last_error(ctx.get()));
    double value = *static_cast<float *>(whale_rt_tensor_data(loss));
    whale_rt_tensor_release(ctx.get(), loss);
    if (!std::isfinite(value)) {
      std::string origin = whale_rt_first_nonfinite(ctx.get());
      return fail("step " + std::to_string(s + 1) + ": the loss is " +
                  (std::isnan(value) ? "NaN" : "infinite") +
                  (origin.empty()
                       ? std::string(" (run with a trace to find the first op "
                                     "that produced it)")
                       : "; the first op to produce a NaN or an infinity "
                         "was '" +
                             origin + "'"));
    }
    result.losses.push_back(value);
    double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    StepReport report{
        s + 1, steps, value, batch / std::max(seconds, 1e-9),
        std::chrono::duration<double>(Clock::now() - start).count()};
    if (metrics) {
      char line[256];
      std::snprintf(line, sizeof line,
                    "{\"step\": %lld, \"loss\": %.7g, \"samples_per_s\": %.2f, "
                    "\"time_s\": %.4f}\n",
                    static_cast<long long>(report.step), value,
                    report.samplesPerSecond, report.elapsedSeconds);
      metrics << line << std::flush;
    }
    if (options.onStep)
      options.onStep(report);
  }

  if (!options.savePath.empty()) {
    std::string err = saveCheckpoint(ctx.get(), options.savePath, name, steps,
                                     seed, params, stateCount);
    if (!err.empty())
      return fail(err);
  }
  result.ok = true;
  return result;
}

} // namespace whale
