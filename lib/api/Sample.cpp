//===- Sample.cpp - text from a trained byte-level model ------------------===//

#include "whale/Train.h"

#include "dialects/Whale/IR/WhaleOps.h"
#include "lib/compile/GenerationFunctions.h"
#include "lib/compile/Jit.h"
#include "lib/compile/ModelLookup.h"
#include "lib/compile/StageSignature.h"
#include "runtime/WhaleRuntime.h"
#include "runtime/checkpoint/Checkpoint.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cmath>
#include <memory>
#include <random>
#include <thread>

namespace whale {

namespace {

/// The logits of the text's last byte, one way or another.
class NextLogits {
public:
  virtual ~NextLogits() = default;
  /// The vocabulary's logits after `text` (valid until the next call), or
  /// null with `error` set.
  virtual const float *after(const std::string &text, std::string &error) = 0;
};

/// The model run whole on the text's last `window` bytes, from position 0
/// (what pads the window after the text cannot reach it: attention is
/// causal), for each byte.
class WindowLogits : public NextLogits {
public:
  WindowLogits(whale_rt_context *ctx, JitProgram::Entry entry, int64_t batch,
               int64_t window, int64_t vocab)
      : ctx(ctx), entry(entry), batch(batch), window(window), vocab(vocab) {
    const int64_t shape[] = {batch, window};
    for (whale_rt_tensor *&t : inputs)
      if (whale_rt_tensor_create(ctx, WHALE_RT_I32, 2, shape, &t) !=
          WHALE_RT_OK)
        failed =
            std::string("the window's tokens: ") + whale_rt_last_error(ctx);
  }
  ~WindowLogits() override {
    release(out);
    for (whale_rt_tensor *t : inputs)
      release(t);
  }

  const float *after(const std::string &text, std::string &error) override {
    if (!failed.empty()) {
      error = failed;
      return nullptr;
    }
    for (whale_rt_tensor *t : inputs) {
      auto *ids = static_cast<int32_t *>(whale_rt_tensor_data(t));
      std::fill(ids, ids + batch * window, 0);
    }
    auto *tok = static_cast<int32_t *>(whale_rt_tensor_data(inputs[0]));
    const int64_t size = static_cast<int64_t>(text.size());
    const int64_t first = std::max<int64_t>(0, size - window);
    const int64_t used = size - first;
    for (int64_t t = 0; t < used; ++t)
      tok[t] = static_cast<unsigned char>(text[first + t]);
    release(out);
    if (entry(ctx, inputs, &out) != WHALE_RT_OK) {
      error = whale_rt_last_error(ctx);
      return nullptr;
    }
    return static_cast<const float *>(whale_rt_tensor_data(out)) +
           (used - 1) * vocab;
  }

private:
  void release(whale_rt_tensor *&t) {
    if (t)
      whale_rt_tensor_release(ctx, t);
    t = nullptr;
  }
  whale_rt_context *ctx;
  JitProgram::Entry entry;
  int64_t batch, window, vocab;
  std::string failed; ///< why the window's tensors could not be made
  whale_rt_tensor *inputs[2] = {nullptr, nullptr};
  whale_rt_tensor *out = nullptr;
};

/// The decoding step over key/value caches (lib/compile/GenerationFunctions.h):
/// each new byte costs one position, not the window. The cache holds the
/// bytes it has read at positions 0, 1, ...; when it is full, it starts
/// over from the text's last half window, so past the window each byte is
/// read with W/2 to W bytes before it (recomputing the window: W), and
/// costs two positions on average, not W.
class CachedLogits : public NextLogits {
public:
  CachedLogits(whale_rt_context *ctx, JitProgram::Entry entry,
               const DecodeFunction &decode)
      : ctx(ctx), entry(entry), window(decode.window),
        args(2 + decode.caches.size(), nullptr),
        results(1 + decode.caches.size(), nullptr) {
    const int64_t shape[] = {1, 1};
    bool made = whale_rt_tensor_create(ctx, WHALE_RT_I32, 2, shape, &args[0]) ==
                    WHALE_RT_OK &&
                whale_rt_tensor_create(ctx, WHALE_RT_I32, 0, nullptr,
                                       &args[1]) == WHALE_RT_OK;
    for (size_t i = 0; made && i < decode.caches.size(); ++i) {
      const std::vector<int64_t> &c = decode.caches[i];
      made = whale_rt_tensor_create(ctx, WHALE_RT_F32,
                                    static_cast<int32_t>(c.size()), c.data(),
                                    &args[2 + i]) == WHALE_RT_OK;
    }
    if (!made)
      failed = std::string("the key/value caches: ") + whale_rt_last_error(ctx);
  }
  ~CachedLogits() override {
    for (whale_rt_tensor *t : args)
      if (t)
        whale_rt_tensor_release(ctx, t);
    if (results[0])
      whale_rt_tensor_release(ctx, results[0]);
  }

  const float *after(const std::string &text, std::string &error) override {
    if (!failed.empty()) {
      error = failed;
      return nullptr;
    }
    const int64_t size = static_cast<int64_t>(text.size());
    // Starting (or the text changed other than by a byte added): read its
    // last window afresh; full: its last half window.
    const bool grew = read > 0 && size == read + 1;
    if (!grew || position == window) {
      const int64_t keep = grew ? std::max<int64_t>(1, window / 2) : window;
      read = size - std::min(size, keep);
      position = 0;
    }
    const float *logits = nullptr;
    for (; read < size; ++read)
      if (!(logits = feed(static_cast<unsigned char>(text[read]), error)))
        return nullptr;
    return logits;
  }

private:
  /// The byte at `position` through the step; its logits.
  const float *feed(int32_t byte, std::string &error) {
    *static_cast<int32_t *>(whale_rt_tensor_data(args[0])) = byte;
    *static_cast<int32_t *>(whale_rt_tensor_data(args[1])) =
        static_cast<int32_t>(position);
    if (results[0])
      whale_rt_tensor_release(ctx, results[0]);
    results[0] = nullptr;
    if (entry(ctx, args.data(), results.data()) != WHALE_RT_OK) {
      error = whale_rt_last_error(ctx);
      return nullptr;
    }
    // The new caches replace the old for the next position.
    for (size_t i = 1; i < results.size(); ++i) {
      whale_rt_tensor_release(ctx, args[1 + i]);
      args[1 + i] = results[i];
      results[i] = nullptr;
    }
    ++position;
    return static_cast<const float *>(whale_rt_tensor_data(results[0]));
  }

  whale_rt_context *ctx;
  JitProgram::Entry entry;
  int64_t window;
  std::string failed; ///< why the caches could not be made
  std::vector<whale_rt_tensor *> args, results;
  int64_t position = 0; ///< positions the caches hold
  int64_t read = 0;     ///< bytes of the text read into them
};

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
  std::string name = model.getName().str();

  // Attention fused first, as the runtime runs it: the decoding step reads
  // whale.attention, not the matmul and softmax chain nn.attention writes.
  mlir::OwningOpRef<mlir::ModuleOp> module = hostForward(interp);
  if (!module)
    return fail("fusing the model's attention failed");
  mlir::func::FuncOp fn =
      addLogitsFunction(module->lookupSymbol<mlir::func::FuncOp>(name), error);
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

  // The decoding step over a key/value cache where the model allows one;
  // else each byte recomputes the window.
  DecodeFunction decode;
  if (options.cache) {
    result.cacheRefusal = addDecodeFunction(fn, decode);
    if (decode.fn)
      fn.erase();
  } else {
    result.cacheRefusal = "not asked for (--no-cache)";
  }
  std::unique_ptr<JitProgram> program = JitProgram::compile(*module, error);
  if (!program)
    return fail("compiling failed: " + error);
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

  std::unique_ptr<NextLogits> next;
  if (decode.fn)
    next = std::make_unique<CachedLogits>(
        ctx.get(), program->lookup(decode.fn.getName().str()), decode);
  else
    next = std::make_unique<WindowLogits>(
        ctx.get(), program->lookup(name + "_logits"), batch, window, vocab);
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
    const float *last = next->after(text, err);
    if (!last)
      return fail(err);
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
    text += static_cast<char>(chosen);
  }
  result.ok = true;
  result.text = spaceFirst ? text.substr(1) : text;
  return result;
}

} // namespace whale
