//===- Sample.cpp - text from a trained byte-level model ------------------===//

#include "whale/Train.h"

#include "dialects/Whale/IR/WhaleOps.h"
#include "lib/compile/Jit.h"
#include "lib/compile/ModelLookup.h"
#include "lowering/Passes.h"
#include "runtime/WhaleRuntime.h"
#include "runtime/checkpoint/Checkpoint.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>
#include <memory>
#include <random>
#include <thread>

namespace whale {

namespace {

/// Adds `@m_logits`: the model up to the logits its cross entropy reads
/// (the loss and what feeds only it are dropped).
mlir::func::FuncOp logitsFunction(mlir::ModuleOp module,
                                  mlir::func::FuncOp model,
                                  std::string &error) {
  mlir::OpBuilder b(module.getContext());
  b.setInsertionPointAfter(model);
  auto fn = mlir::cast<mlir::func::FuncOp>(b.clone(*model));
  fn.setName((model.getName() + "_logits").str());
  fn->removeAttr("whale.train");
  inlineTaskGraphs(fn);
  CrossEntropyOp ce;
  fn.walk([&](CrossEntropyOp op) {
    if (fn.getNumArguments() == 2 && op.getLabels() == fn.getArgument(1))
      ce = op;
  });
  if (!ce) {
    error = "sampling needs a model whose loss is a cross entropy of its "
            "second input (the targets)";
    fn.erase();
    return nullptr;
  }
  mlir::Block &entry = fn.getBody().front();
  auto ret = mlir::cast<mlir::func::ReturnOp>(entry.getTerminator());
  ret->setOperands(ce.getLogits());
  fn.setFunctionType(
      b.getFunctionType(fn.getArgumentTypes(), {ce.getLogits().getType()}));
  llvm::SmallVector<mlir::Operation *> ops;
  for (mlir::Operation &op : entry.without_terminator())
    ops.push_back(&op);
  for (mlir::Operation *op : llvm::reverse(ops))
    if (!mlir::isa<ParamOp>(op) && mlir::isOpTriviallyDead(op))
      op->erase();
  return fn;
}

} // namespace

SampleResult sample(Interpreter &interp, const SampleOptions &options) {
  SampleResult result;
  auto fail = [&](std::string msg) {
    result.error = std::move(msg);
    return result;
  };
  std::string error;
  mlir::func::FuncOp model =
      findModel(interp, options.model, /*needsTrainBlock=*/false, error);
  if (!model)
    return fail(error);
  mlir::ModuleOp loaded = interp.module();
  std::string name = model.getName().str();

  mlir::OwningOpRef<mlir::ModuleOp> module = loaded.clone();
  mlir::func::FuncOp fn = logitsFunction(
      *module, module->lookupSymbol<mlir::func::FuncOp>(name), error);
  if (!fn)
    return fail(error);
  auto tokensType =
      mlir::cast<mlir::RankedTensorType>(fn.getArgumentTypes()[0]);
  auto logitsType = mlir::cast<mlir::RankedTensorType>(fn.getResultTypes()[0]);
  if (tokensType.getRank() != 2 || !tokensType.getElementType().isInteger(32) ||
      logitsType.getRank() != 3)
    return fail("sampling needs i32 tokens [B, T] and logits [B, T, V]");
  int64_t batch = tokensType.getShape()[0], window = tokensType.getShape()[1];
  int64_t vocab = logitsType.getShape()[2];
  // The text is bytes: each token id is a byte (issue 92 item 14). A larger
  // vocabulary has ids no byte can print; a smaller one cannot read every
  // byte of the prompt.
  if (vocab > 256)
    return fail("sampling reads and prints bytes, but model '" + name +
                "' has a vocabulary of " + std::to_string(vocab) +
                " ids: those of 256 and more are no byte");
  for (unsigned char c : options.prompt)
    if (c >= vocab)
      return fail("the prompt's byte " + std::to_string(c) +
                  " is not an id of model '" + name + "', whose vocabulary " +
                  "has " + std::to_string(vocab) + " (0 to " +
                  std::to_string(vocab - 1) + ")");
  std::vector<Parameter> params;
  fn.walk([&](ParamOp p) {
    params.push_back(
        {p.getName().str(), std::vector<int64_t>(p.getType().getShape())});
  });

  std::unique_ptr<JitProgram> program = JitProgram::compile(*module, error);
  if (!program)
    return fail("compiling failed: " + error);
  JitProgram::Entry logits = program->lookup(name + "_logits");
  int threads =
      options.threads > 0
          ? options.threads
          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::unique_ptr<whale_rt_context, void (*)(whale_rt_context *)> ctx(
      whale_rt_context_create("cpu:0", threads, 0, options.seed),
      whale_rt_context_destroy);
  int64_t step = 0;
  std::string err = loadCheckpoint(ctx.get(), options.checkpoint, name, params,
                                   /*stateCount=*/0, step);
  if (!err.empty())
    return fail(err);

  std::vector<whale_rt_tensor *> inputs(2, nullptr);
  for (whale_rt_tensor *&t : inputs)
    whale_rt_tensor_create(ctx.get(), WHALE_RT_I32, 2,
                           tokensType.getShape().data(), &t);
  std::string text = options.prompt;
  std::mt19937_64 rng(options.seed);
  std::vector<double> probs(vocab);
  // An empty prompt starts from a space.
  const bool spaceFirst = text.empty();
  if (spaceFirst && vocab <= ' ')
    return fail("an empty prompt starts from a space, which is no id of "
                "model '" +
                name + "' (vocabulary " + std::to_string(vocab) +
                "): give a prompt");
  if (spaceFirst)
    text = " ";
  for (int64_t n = 0; n < options.tokens; ++n) {
    // The text from position 0 while it is shorter than the window (what
    // follows it cannot reach it: attention is causal), then its last
    // `window` bytes; the logits of its last byte choose the next.
    auto *tok = static_cast<int32_t *>(whale_rt_tensor_data(inputs[0]));
    // What pads the window after the text (id 0) cannot reach it.
    std::fill(tok, tok + batch * window, 0);
    std::fill(static_cast<int32_t *>(whale_rt_tensor_data(inputs[1])),
              static_cast<int32_t *>(whale_rt_tensor_data(inputs[1])) +
                  batch * window,
              0);
    const int64_t size = static_cast<int64_t>(text.size());
    const int64_t first = std::max<int64_t>(0, size - window);
    const int64_t used = size - first;
    for (int64_t t = 0; t < used; ++t)
      tok[t] = static_cast<unsigned char>(text[first + t]);
    whale_rt_tensor *out = nullptr;
    if (logits(ctx.get(), inputs.data(), &out) != WHALE_RT_OK)
      return fail(whale_rt_last_error(ctx.get()));
    const float *last = static_cast<const float *>(whale_rt_tensor_data(out)) +
                        (used - 1) * vocab;
    int64_t chosen = vocab - 1;
    if (options.temperature == 0) {
      // Greedy: the first of the largest, as torch.argmax and
      // transformers' generate(do_sample=False) choose.
      chosen = std::max_element(last, last + vocab) - last;
    } else {
      double mx = *std::max_element(last, last + vocab), sum = 0;
      for (int64_t v = 0; v < vocab; ++v)
        sum += probs[v] = std::exp((last[v] - mx) / options.temperature);
      std::uniform_real_distribution<double> pick(0, sum);
      double r = pick(rng);
      for (int64_t v = 0; v < vocab; ++v)
        if ((r -= probs[v]) <= 0) {
          chosen = v;
          break;
        }
    }
    whale_rt_tensor_release(ctx.get(), out);
    text += static_cast<char>(chosen);
  }
  result.ok = true;
  result.text = spaceFirst ? text.substr(1) : text;
  return result;
}

} // namespace whale
