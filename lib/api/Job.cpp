//===- Job.cpp - a model's train step driven by the host ------------------===//

#include "lib/train/JobImpl.h"

#include "dialects/Whale/IR/TrainAttrs.h"
#include "dialects/Whale/IR/WhaleOps.h"
#include "lib/compile/DataSpec.h"
#include "lib/compile/ModelLookup.h"
#include "lib/compile/PassErrors.h"
#include "lowering/Passes.h"
#include "lowering/Pipelines.h"
#include "lowering/Plan.h"
#include "runtime/core/Tensor.h"
#include "runtime/run/StepLog.h"

#include "llvm/ADT/StringSet.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"

#include <chrono>
#include <cstdint>
#include <thread>

namespace whale {

int64_t TensorInfo::elements() const { return rt::numElements(shape); }

int64_t TensorInfo::bytes() const { return elements() * 4; }

namespace {

TensorInfo infoOf(std::string name, mlir::RankedTensorType type) {
  return {std::move(name), type.getElementType().isF32() ? "f32" : "i32",
          std::vector<int64_t>(type.getShape())};
}

/// Makes every parameter of `module` in `ctx` with its initializer, as the
/// first step would: the same values, so they can be read before it.
std::string initializeParameters(whale_rt_context *ctx, mlir::ModuleOp module) {
  std::string error;
  module.walk([&](ParamOp p) {
    if (!error.empty())
      return;
    llvm::ArrayRef<double> args = p.getInitArgs();
    mlir::RankedTensorType t = p.getType();
    whale_rt_tensor *out = nullptr;
    if (whale_rt_param(ctx, p.getName().str().c_str(),
                       static_cast<int32_t>(p.getInit()), args.data(),
                       static_cast<int32_t>(args.size()),
                       static_cast<int32_t>(t.getRank()), t.getShape().data(),
                       &out) != WHALE_RT_OK)
      error = whale_rt_last_error(ctx);
  });
  return error;
}

} // namespace

std::string Job::Impl::runStep(whale_rt_tensor *const *tensors,
                               double elapsedBefore) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point t0 = Clock::now();
  int64_t s = done;
  // The calling thread drives the device: under its share, if it has one.
  whale_rt_context_enter(ctx.get());
  whale_rt_set_train_state(ctx.get(), s + 1, settings.lrFactor(s));
  whale_rt_tensor *loss = nullptr;
  if (entry(ctx.get(), tensors, &loss) != WHALE_RT_OK)
    return "step " + std::to_string(s + 1) + ": " +
           whale_rt_last_error(ctx.get());
  double value = *static_cast<float *>(whale_rt_tensor_data(loss));
  whale_rt_tensor_release(ctx.get(), loss);
  if (std::string err =
          StepLog::nonFinite(s + 1, value, whale_rt_first_nonfinite(ctx.get()));
      !err.empty())
    return err;
  double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  done = s + 1;
  last.step = done;
  last.steps = settings.steps;
  last.loss = value;
  last.samplesPerSecond = seconds > 0 ? double(batch) / seconds : 0;
  last.elapsedSeconds = elapsedBefore + seconds;
  return "";
}

std::string Job::Impl::evaluate(DataSource &source, int64_t steps,
                                double &loss) {
  if (!forward)
    return "no forward pass for '" + model + "'";
  // Held-out batches are evaluated: dropout passes everything (the next
  // step's set_train_state trains again).
  whale_rt_set_rows(ctx.get(), 0, /*training=*/0);
  double sum = 0;
  for (int64_t k = 0; k < steps; ++k) {
    if (std::string err = source.fill(k, inputs); !err.empty())
      return "evaluating: " + err;
    whale_rt_tensor *out = nullptr;
    if (forward(ctx.get(), inputs.data(), &out) != WHALE_RT_OK)
      return "evaluating: " + std::string(whale_rt_last_error(ctx.get()));
    sum += *static_cast<float *>(whale_rt_tensor_data(out));
    whale_rt_tensor_release(ctx.get(), out);
  }
  loss = steps > 0 ? sum / double(steps) : 0.0;
  return "";
}

Job::Job(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
Job::~Job() = default;

std::unique_ptr<Job> Job::create(Interpreter &interp, const JobOptions &options,
                                 std::string &error) {
  mlir::func::FuncOp model =
      findModel(interp, options.model, /*needsTrainBlock=*/true, error);
  if (!model)
    return nullptr;
  auto impl = std::make_unique<Impl>();
  impl->model = model.getName().str();
  impl->batch = options.batch ? *options.batch : plan::trainBatch(model);
  if (impl->batch < 1) {
    error =
        "a job's batch must be at least 1, got " + std::to_string(impl->batch);
    return nullptr;
  }
  // The job's own copy of the script, at its batch.
  impl->own = interp.atBatch(impl->batch);
  if (!impl->own || !impl->own->module()) {
    error = "elaborating '" + impl->model + "' at a batch of " +
            std::to_string(impl->batch) + " failed" +
            (impl->own ? ":\n" + impl->own->renderDiagnostics() : "");
    return nullptr;
  }
  model = findModel(*impl->own, impl->model, true, error);
  if (!model)
    return nullptr;
  impl->settings = trainSettings(model, options.steps, options.seed);
  if (std::string err = impl->settings.checkLength(impl->batch); !err.empty()) {
    error = err;
    return nullptr;
  }

  // The train step, compiled.
  mlir::OwningOpRef<mlir::ModuleOp> module = impl->own->module().clone();
  mlir::PassManager pm(&impl->own->context());
  PassErrors errors(&impl->own->context());
  TrainPipelineOptions pipeline;
  pipeline.fuse = options.fuse;
  pipeline.ampStorage = options.ampStorage;
  buildWhaleTrainPipeline(pm, pipeline);
  if (mlir::failed(pm.run(*module))) {
    error = errors.text("building the train step of '" + impl->model +
                        "' failed");
    return nullptr;
  }
  auto gradFn = module->lookupSymbol<mlir::func::FuncOp>(impl->model + "_grad");
  auto names = gradFn->getAttrOfType<mlir::ArrayAttr>("whale.gradients");
  for (auto [i, n] : llvm::enumerate(names)) {
    auto type =
        mlir::cast<mlir::RankedTensorType>(gradFn.getResultTypes()[i + 1]);
    std::string name = mlir::cast<mlir::StringAttr>(n).str();
    impl->params.push_back({name, std::vector<int64_t>(type.getShape())});
    impl->paramInfo.push_back(infoOf(name, type));
  }
  // Frozen parameters (running statistics) take no gradient but are the
  // job's state as much: saved, restored and reported with the others.
  llvm::StringSet<> frozen;
  gradFn.walk([&](ParamOp p) {
    if (!p.getFrozen() || !frozen.insert(p.getName()).second)
      return;
    impl->params.push_back(
        {p.getName().str(), std::vector<int64_t>(p.getType().getShape())});
    impl->paramInfo.push_back(infoOf(p.getName().str(), p.getType()));
  });
  impl->program = JitProgram::compile(*module, error);
  if (!impl->program) {
    error = "compiling the train step failed: " + error;
    return nullptr;
  }
  impl->entry = impl->program->lookup(impl->model + "_train");
  impl->forward = impl->program->lookup(impl->model);
  if (!impl->entry) {
    error = "no train step for '" + impl->model + "'";
    return nullptr;
  }

  // The device, the parameters and the input tensors.
  int threads =
      options.threads > 0
          ? options.threads
          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  impl->ctx.reset(
      whale_rt_context_create("cpu:0", threads, 0, impl->settings.seed));
  if (!impl->ctx) {
    error = "the CPU device could not be opened";
    return nullptr;
  }
  if (ampBf16(model))
    whale_rt_set_amp(impl->ctx.get(), WHALE_RT_AMP_BF16);
  if (std::string err = initializeParameters(impl->ctx.get(), *module);
      !err.empty()) {
    error = err;
    return nullptr;
  }
  auto inputNames = model->getAttrOfType<mlir::ArrayAttr>("whale.inputs");
  for (auto [i, t] : llvm::enumerate(model.getArgumentTypes())) {
    auto type = mlir::cast<mlir::RankedTensorType>(t);
    whale_rt_tensor *tensor = newTensor(impl->ctx.get(), type, error);
    if (!tensor)
      return nullptr;
    impl->inputs.push_back(tensor);
    impl->inputInfo.push_back(
        infoOf(inputNames ? mlir::cast<mlir::StringAttr>(inputNames[i]).str()
                          : "input" + std::to_string(i),
               type));
  }
  return std::unique_ptr<Job>(new Job(std::move(impl)));
}

const std::string &Job::model() const { return impl->model; }
const std::vector<TensorInfo> &Job::inputs() const { return impl->inputInfo; }
const std::vector<TensorInfo> &Job::parameters() const {
  return impl->paramInfo;
}
int64_t Job::stepsDone() const { return impl->done; }
const StepReport &Job::lastStep() const { return impl->last; }
int64_t Job::copiedInputBytes() const { return impl->copied; }

bool Job::step(const void *const *inputs, std::string &error) {
  whale_rt_context *ctx = impl->ctx.get();
  std::vector<whale_rt_tensor *> tensors = impl->inputs;
  std::vector<whale_rt_tensor *> wrapped;
  auto releaseWrapped = [&] {
    for (whale_rt_tensor *t : wrapped)
      whale_rt_tensor_release(ctx, t);
  };
  for (size_t i = 0; i < impl->inputInfo.size(); ++i) {
    const TensorInfo &info = impl->inputInfo[i];
    if (!inputs || !inputs[i]) {
      releaseWrapped();
      error =
          "input " + std::to_string(i) + " ('" + info.name + "') has no buffer";
      return false;
    }
    // Aligned memory is read in place: the step only reads its inputs.
    whale_rt_tensor *t = nullptr;
    if (reinterpret_cast<uintptr_t>(inputs[i]) % WHALE_RT_ALIGNMENT == 0 &&
        whale_rt_tensor_wrap(
            ctx, info.dtype == "f32" ? WHALE_RT_F32 : WHALE_RT_I32,
            static_cast<int32_t>(info.shape.size()), info.shape.data(),
            const_cast<void *>(inputs[i]), &t) == WHALE_RT_OK) {
      wrapped.push_back(t);
      tensors[i] = t;
      continue;
    }
    if (whale_rt_tensor_write(ctx, impl->inputs[i], inputs[i], info.bytes()) !=
        WHALE_RT_OK) {
      releaseWrapped();
      error = whale_rt_last_error(ctx);
      return false;
    }
    impl->copied += info.bytes();
  }
  error = impl->runStep(tensors.data(), impl->last.elapsedSeconds);
  releaseWrapped();
  return error.empty();
}

namespace {
/// The parameter `name` of `impl` and its tensor; null with `error` set.
whale_rt_tensor *paramTensor(const Job::Impl &impl, const std::string &name,
                             int64_t count, std::string &error) {
  for (const TensorInfo &p : impl.paramInfo) {
    if (p.name != name)
      continue;
    if (count != p.elements()) {
      error = "parameter '" + name + "' has " + std::to_string(p.elements()) +
              " elements, not " + std::to_string(count);
      return nullptr;
    }
    whale_rt_tensor *t = nullptr;
    // Made at creation, so this finds it (the initializer is not used).
    if (whale_rt_param(impl.ctx.get(), name.c_str(), WHALE_RT_INIT_ZEROS,
                       nullptr, 0, static_cast<int32_t>(p.shape.size()),
                       p.shape.data(), &t) != WHALE_RT_OK)
      error = whale_rt_last_error(impl.ctx.get());
    return t;
  }
  error = "'" + impl.model + "' has no parameter '" + name + "'";
  return nullptr;
}
} // namespace

bool Job::readParameter(const std::string &name, float *out, int64_t count,
                        std::string &error) const {
  whale_rt_tensor *t = paramTensor(*impl, name, count, error);
  if (!t)
    return false;
  if (!out && count > 0) {
    error = "no buffer to read parameter '" + name + "' into";
    return false;
  }
  if (whale_rt_tensor_read(impl->ctx.get(), t, out, count * 4) != WHALE_RT_OK) {
    error = whale_rt_last_error(impl->ctx.get());
    return false;
  }
  return true;
}

bool Job::writeParameter(const std::string &name, const float *values,
                         int64_t count, std::string &error) {
  whale_rt_tensor *t = paramTensor(*impl, name, count, error);
  if (!t)
    return false;
  if (!values && count > 0) {
    error = "no values to write into parameter '" + name + "'";
    return false;
  }
  if (whale_rt_tensor_write(impl->ctx.get(), t, values, count * 4) !=
      WHALE_RT_OK) {
    error = whale_rt_last_error(impl->ctx.get());
    return false;
  }
  return true;
}

bool Job::save(const std::string &path, std::string &error) const {
  error = saveCheckpoint(impl->ctx.get(), path, impl->model, impl->done,
                         impl->settings.seed, impl->params,
                         impl->settings.stateCount);
  return error.empty();
}

bool Job::load(const std::string &path, std::string &error) {
  int64_t next = 0;
  error = loadCheckpoint(impl->ctx.get(), path, impl->model, impl->params,
                         impl->settings.stateCount, next);
  if (!error.empty())
    return false;
  impl->done = next;
  return true;
}

} // namespace whale
