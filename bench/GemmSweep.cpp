//===- GemmSweep.cpp - what a device's GEMMs sustain, against the model ---===//
//
// Times the runtime's matmul at the shapes of a GPT layer's products as the
// published Megatron-LM runs cut them (tokens x width, tensor-parallel
// degree t), GPT-2 small's at batch 8 and squares of 2048 to 8192, in
// three precisions, and sets each beside what the
// simulator's device model predicts for it:
//   off      fp32 tensors, fp32 products;
//   bf16     fp32 tensors under amp: each product rounds its operands to
//            bf16 copies first (two cast kernels inside the time), as amp
//            without bf16 storage runs;
//   storage  bf16 tensors in and out, fp32 accumulation: the GEMM alone,
//            as amp's storage (--bf16-activations) runs it.
// The model's figure is the data
// sheet's peak times gemmEfficiency (waves of tiles, tile edges, depth).
// On a GPU this says whether the model's 98-99% of peak for large products
// holds, the open question behind its pipelines predicting faster than the
// published A100 runs (docs/simulation.md).
//
//   whale-gemm-sweep [--device cuda:0] [--model H100-SXM]
//                    [--amp off|bf16|storage|both|all]
//                    [--shapes MxNxK[:ta|:tb],...]
//                    [--min-ms 20]
//
// --amp both is off and bf16; all (the default) adds storage.
//
// Time per product: back-to-back launches until --min-ms has passed, ended
// by reading the output back (which waits for the device), after two
// untimed ones. Runs on a CPU device too (the model column then names the
// --model GPU, not this machine).
//
//===----------------------------------------------------------------------===//

#include "CallTimer.h"
#include "perfmodel/DeviceModel.h"
#include "runtime/WhaleRuntime.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Shape {
  std::string name;
  int64_t m, n, k;
  bool transA = false, transB = false;
};

/// A transformer layer's products at `tokens` rows, width `d`, tensor
/// parallel over `t`: the forward's four and the backward's two of the
/// first MLP product (its input's gradient and its weight's).
void addLayer(std::vector<Shape> &out, const std::string &model, int64_t tokens,
              int64_t d, int64_t t) {
  out.push_back({model + " qkv", tokens, 3 * d / t, d});
  out.push_back({model + " proj", tokens, d, d / t});
  out.push_back({model + " fc1", tokens, 4 * d / t, d});
  out.push_back({model + " fc2", tokens, d, 4 * d / t});
  out.push_back({model + " fc1 dX", tokens, d, 4 * d / t, false, true});
  out.push_back({model + " fc1 dW", d, 4 * d / t, tokens, true, false});
}

/// The published runs' layers (Megatron-LM, 2021: sequence 2048, one
/// sample a micro-batch), from 1.7B to 1T parameters.
std::vector<Shape> publishedShapes() {
  std::vector<Shape> s;
  addLayer(s, "1.7B t=1", 2048, 2304, 1);
  addLayer(s, "3.6B t=2", 2048, 3072, 2);
  addLayer(s, "18.4B t=8", 2048, 6144, 8);
  addLayer(s, "175B t=8", 2048, 12288, 8);
  addLayer(s, "1T t=8", 2048, 25600, 8);
  return s;
}

/// GPT-2 small's products at batch 8 (8,192 tokens, width 768, vocabulary
/// 50,304), as bench/gpt2_gpu.py trains it, and the square products the
/// GEMM issue's target names.
std::vector<Shape> gpt2AndSquareShapes() {
  std::vector<Shape> s;
  addLayer(s, "gpt2 b8", 8192, 768, 1);
  s.push_back({"gpt2 b8 head", 8192, 50304, 768});
  s.push_back({"gpt2 b8 head dX", 8192, 768, 50304, false, true});
  for (int64_t n : {2048, 4096, 8192})
    s.push_back({"square " + std::to_string(n), n, n, n});
  return s;
}

bool parseShapes(const char *text, std::vector<Shape> &out) {
  std::string all(text);
  size_t at = 0;
  while (at <= all.size()) {
    size_t end = all.find(',', at);
    std::string one = all.substr(at, end == std::string::npos ? end : end - at);
    long long m = 0, n = 0, k = 0;
    char tail[8] = "";
    const int got =
        std::sscanf(one.c_str(), "%lldx%lldx%lld%7s", &m, &n, &k, tail);
    // An optional suffix transposes an operand as the backward's products
    // do: ":ta" (the weight gradient's x^T dy), ":tb" (the input
    // gradient's dy W^T).
    const bool transA = !std::strcmp(tail, ":ta"),
               transB = !std::strcmp(tail, ":tb");
    if ((got != 3 && !(got == 4 && (transA || transB))) || m <= 0 || n <= 0 ||
        k <= 0)
      return false;
    out.push_back({one, m, n, k, transA, transB});
    if (end == std::string::npos)
      break;
    at = end + 1;
  }
  return !out.empty();
}

struct Tensors {
  whale_rt_context *ctx;
  whale_rt_tensor *a = nullptr, *b = nullptr, *c = nullptr;
  ~Tensors() {
    for (whale_rt_tensor *t : {a, b, c})
      if (t)
        whale_rt_tensor_release(ctx, t);
  }
};

/// A bf16 number's value (its bits are a float's upper half).
float bf16Value(uint16_t bits) {
  uint32_t word = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &word, sizeof f);
  return f;
}

/// Seconds of one product of `s`, or a negative number on failure; with
/// `bf16Tensors` every operand and the result are bf16.
double timeProduct(whale_rt_context *ctx, const Shape &s, double minSeconds,
                   bool bf16Tensors) {
  Tensors t{ctx};
  const int64_t a[2] = {s.transA ? s.k : s.m, s.transA ? s.m : s.k};
  const int64_t b[2] = {s.transB ? s.n : s.k, s.transB ? s.k : s.n};
  const int64_t c[2] = {s.m, s.n};
  const int32_t dtype = bf16Tensors ? WHALE_RT_BF16 : WHALE_RT_F32;
  if (whale_rt_tensor_create(ctx, dtype, 2, a, &t.a) != WHALE_RT_OK ||
      whale_rt_tensor_create(ctx, dtype, 2, b, &t.b) != WHALE_RT_OK ||
      whale_rt_tensor_create(ctx, dtype, 2, c, &t.c) != WHALE_RT_OK ||
      whale_rt_fill(ctx, t.a, 0.5) != WHALE_RT_OK ||
      whale_rt_fill(ctx, t.b, 0.25) != WHALE_RT_OK)
    return -1;
  float first = 0;
  auto run = [&] {
    return whale_rt_matmul(ctx, t.a, t.b, t.c, s.transA, s.transB) ==
           WHALE_RT_OK;
  };
  // Reading the output back waits for every product launched before it.
  auto settle = [&] {
    if (!bf16Tensors)
      return whale_rt_tensor_read(ctx, t.c, &first, sizeof first) ==
             WHALE_RT_OK;
    uint16_t bits = 0;
    if (whale_rt_tensor_read(ctx, t.c, &bits, sizeof bits) != WHALE_RT_OK)
      return false;
    first = bf16Value(bits);
    return true;
  };
  const double seconds = whale::bench::secondsPerCall(run, settle, minSeconds,
                                                      /*batch=*/4);
  if (seconds < 0)
    return -1;
  // 0.5 x 0.25 summed over k: a product that ran computes this (to bf16's
  // 8 bits where the result is bf16).
  const double want = 0.125 * double(s.k);
  if (bf16Tensors ? std::fabs(first - want) > want / 256 : first != float(want))
    std::fprintf(stderr, "warning: %s computed %g, not %g\n", s.name.c_str(),
                 first, want);
  return seconds;
}

int usage() {
  std::fprintf(
      stderr,
      "usage: whale-gemm-sweep [--device cuda:0] [--model NAME] "
      "[--amp off|bf16|storage|both|all] [--shapes MxNxK[:ta|:tb],...] "
      "[--min-ms N]\n"
      "models: %s\n",
      whale::perf::knownGpuModelNames().c_str());
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  std::string device = "cuda:0", modelName = "H100-SXM", amp = "all";
  double minSeconds = 0.02;
  std::vector<Shape> shapes;
  for (int i = 1; i < argc; ++i) {
    auto value = [&]() -> const char * {
      return i + 1 < argc ? argv[++i] : nullptr;
    };
    const char *v = nullptr;
    if (!std::strcmp(argv[i], "--device") && (v = value()))
      device = v;
    else if (!std::strcmp(argv[i], "--model") && (v = value()))
      modelName = v;
    else if (!std::strcmp(argv[i], "--amp") && (v = value()))
      amp = v;
    else if (!std::strcmp(argv[i], "--min-ms") && (v = value()))
      minSeconds = std::atof(v) / 1e3;
    else if (!std::strcmp(argv[i], "--shapes") && (v = value())) {
      if (!parseShapes(v, shapes)) {
        std::fprintf(stderr,
                     "--shapes %s: want MxNxK[:ta|:tb][,...], each "
                     "positive\n",
                     v);
        return 2;
      }
    } else
      return usage();
  }
  const whale::perf::DeviceModel *model = whale::perf::findGpuModel(modelName);
  if (!model ||
      !(amp == "off" || amp == "bf16" || amp == "storage" || amp == "both" ||
        amp == "all") ||
      !(minSeconds > 0))
    return usage();
  if (shapes.empty()) {
    shapes = publishedShapes();
    for (const Shape &g : gpt2AndSquareShapes())
      shapes.push_back(g);
  }

  whale_rt_context *ctx = nullptr;
  char why[640] = "";
  if (whale_rt_context_open(device.c_str(), 0, 0, 1, &ctx, why, sizeof why) !=
      WHALE_RT_OK) {
    std::fprintf(stderr, "whale-gemm-sweep: %s: %s\n", device.c_str(), why);
    return 1;
  }
  std::printf("%s, the model's %s beside it (peak %.1f fp32, %.1f bf16 "
              "TFLOP/s)\n",
              device.c_str(), model->name.c_str(), model->matmulFlops / 1e12,
              model->matmulFlopsBf16 / 1e12);
  std::printf("%-16s %6s %6s %6s %7s %10s %9s %8s %10s %9s\n", "product", "M",
              "N", "K", "amp", "ms", "TFLOP/s", "of peak", "model ms",
              "model/run");
  int status = 0;
  for (const char *mode : {"off", "bf16", "storage"}) {
    const bool wanted = amp == mode || amp == "all" ||
                        (amp == "both" && std::strcmp(mode, "storage") != 0);
    if (!wanted)
      continue;
    const bool bf16 = std::strcmp(mode, "off") != 0;
    const bool storage = std::strcmp(mode, "storage") == 0;
    if (whale_rt_set_amp(ctx, bf16 ? WHALE_RT_AMP_BF16 : WHALE_RT_AMP_OFF) !=
        WHALE_RT_OK) {
      std::fprintf(stderr, "whale-gemm-sweep: amp: %s\n",
                   whale_rt_last_error(ctx));
      status = 1;
      continue;
    }
    for (const Shape &s : shapes) {
      const double seconds = timeProduct(ctx, s, minSeconds, storage);
      if (seconds < 0) {
        std::printf("%-16s %6lld %6lld %6lld %7s failed: %s\n", s.name.c_str(),
                    (long long)s.m, (long long)s.n, (long long)s.k, mode,
                    whale_rt_last_error(ctx));
        status = 1;
        continue;
      }
      whale::perf::OpCost cost;
      cost.flops = 2.0 * double(s.m) * double(s.n) * double(s.k);
      cost.bytes =
          (storage ? 2.0 : 4.0) * double(s.m * s.k + s.k * s.n + s.m * s.n);
      cost.matmul = true;
      cost.bf16 = bf16;
      cost.m = s.m;
      cost.n = s.n;
      cost.k = s.k;
      const double predicted = whale::perf::opSeconds(cost, *model);
      const double peak = bf16 ? model->matmulFlopsBf16 : model->matmulFlops;
      const double rate = cost.flops / seconds;
      std::printf("%-16s %6lld %6lld %6lld %7s %10.4f %9.1f %7.1f%% %10.4f "
                  "%9.3f\n",
                  s.name.c_str(), (long long)s.m, (long long)s.n,
                  (long long)s.k, mode, seconds * 1e3, rate / 1e12,
                  100 * rate / peak, predicted * 1e3, predicted / seconds);
      std::fflush(stdout);
    }
  }
  whale_rt_context_destroy(ctx);
  return status;
}
