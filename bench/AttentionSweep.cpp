//===- AttentionSweep.cpp - attention's time on a device, by path ---------===//
//
// Times the runtime's attention, forward and forward + backward, at GPT-2
// small's shape (batch 8, 12 heads, context 1024, 64 columns) and at long
// contexts (batch 1: 4096, 8192), causal, under amp (bf16 operands) or in
// fp32 (--amp off), with the GPU's two paths side by side: the chunked cuBLAS
// GEMMs that hold a chunk of scores (AttentionPlan.h) and the fused tensor-core
// kernels that hold none (FlashAttention.cu, FlashAttentionF32.cu;
// WHALE_CUDA_FLASH=1). Also prints the context's peak tensor memory, which
// excludes the GEMM path's scratch. bench/sdpa_sweep.py times PyTorch's
// scaled_dot_product_attention at the same shapes.
//
//   whale-attention-sweep [--device cuda:0] [--shapes BxHxTxE,...]
//                         [--amp bf16|off] [--min-ms 50]
//
// Time per call: back-to-back calls until --min-ms has passed, ended by
// reading an output back (which waits for the device), after two untimed
// ones. A non-finite output fails the run.
//
//===----------------------------------------------------------------------===//

#include "CallTimer.h"
#include "runtime/WhaleRuntime.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Dims {
  int64_t b, h, t, e;
};

bool parseShapes(const char *text, std::vector<Dims> &out) {
  std::string s(text);
  size_t at = 0;
  while (at <= s.size()) {
    size_t comma = s.find(',', at);
    std::string one = s.substr(
        at, comma == std::string::npos ? std::string::npos : comma - at);
    Dims d{};
    char tail = 0;
    if (std::sscanf(one.c_str(), "%ldx%ldx%ldx%ld%c", &d.b, &d.h, &d.t, &d.e,
                    &tail) != 4 ||
        d.b <= 0 || d.h <= 0 || d.t <= 0 || d.e <= 0)
      return false;
    out.push_back(d);
    if (comma == std::string::npos)
      break;
    at = comma + 1;
  }
  return !out.empty();
}

struct Tensors {
  whale_rt_context *ctx;
  std::vector<whale_rt_tensor *> all;
  ~Tensors() {
    for (whale_rt_tensor *t : all)
      whale_rt_tensor_release(ctx, t);
  }
  whale_rt_tensor *make(const int64_t *shape, double fill) {
    whale_rt_tensor *t = nullptr;
    if (whale_rt_tensor_create(ctx, WHALE_RT_F32, 4, shape, &t) != WHALE_RT_OK)
      return nullptr;
    all.push_back(t);
    return whale_rt_fill(ctx, t, fill) == WHALE_RT_OK ? t : nullptr;
  }
};

/// Seconds of one call of `step` (negative on failure), reading `probe`
/// back to wait; fails on a non-finite value there.
template <typename Step>
double timeIt(whale_rt_context *ctx, whale_rt_tensor *probe, double minSeconds,
              Step step) {
  auto settle = [&] {
    float first = 0;
    return whale_rt_tensor_read(ctx, probe, &first, sizeof first) ==
               WHALE_RT_OK &&
           std::isfinite(first);
  };
  return whale::bench::secondsPerCall(step, settle, minSeconds, /*batch=*/2);
}

int usage() {
  std::fprintf(stderr, "usage: whale-attention-sweep [--device cuda:0] "
                       "[--shapes BxHxTxE,...] [--amp bf16|off] "
                       "[--min-ms N]\n");
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  std::string device = "cuda:0";
  std::vector<Dims> shapes;
  double minMs = 50;
  bool amp = true;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    const char *next = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!std::strcmp(a, "--device") && next)
      device = argv[++i];
    else if (!std::strcmp(a, "--shapes") && next) {
      if (!parseShapes(argv[++i], shapes))
        return usage();
    } else if (!std::strcmp(a, "--amp") && next) {
      const char *mode = argv[++i];
      if (std::strcmp(mode, "bf16") && std::strcmp(mode, "off"))
        return usage();
      amp = !std::strcmp(mode, "bf16");
    } else if (!std::strcmp(a, "--min-ms") && next)
      minMs = std::atof(argv[++i]);
    else
      return usage();
  }
  if (shapes.empty())
    shapes = {{8, 12, 1024, 64},
              {1, 12, 4096, 64},
              {1, 12, 8192, 64},
              {1, 8, 4096, 128}};
  std::printf("attention on %s, causal, %s; ms a call (forward, "
              "forward + backward)\n",
              device.c_str(), amp ? "amp bf16" : "fp32");
  std::printf("%-22s %-6s %10s %12s %10s %14s\n", "shape", "path", "fwd ms",
              "fwd+bwd ms", "fwd TF/s", "peak tensors");
  int status = 0;
  for (const Dims &d : shapes)
    for (const char *path : {"gemm", "flash"}) {
      setenv("WHALE_CUDA_FLASH", std::strcmp(path, "flash") ? "0" : "1", 1);
      whale_rt_context *ctx = nullptr;
      char why[512] = "";
      if (whale_rt_context_open(device.c_str(), 0, 0, 1, &ctx, why,
                                sizeof why) != WHALE_RT_OK) {
        std::fprintf(stderr, "whale-attention-sweep: %s\n", why);
        return 1;
      }
      double fwd = -1, both = -1;
      {
        Tensors ts{ctx};
        const int64_t shape[4] = {d.b, d.h, d.t, d.e};
        whale_rt_tensor *q = ts.make(shape, 0.02), *k = ts.make(shape, 0.01),
                        *v = ts.make(shape, 0.5), *o = ts.make(shape, 0),
                        *dout = ts.make(shape, 0.1), *dq = ts.make(shape, 0),
                        *dk = ts.make(shape, 0), *dv = ts.make(shape, 0);
        const double scale = 1.0 / std::sqrt(double(d.e));
        if (q && k && v && o && dout && dq && dk && dv &&
            whale_rt_set_amp(ctx, amp ? WHALE_RT_AMP_BF16 : WHALE_RT_AMP_OFF) ==
                WHALE_RT_OK) {
          fwd = timeIt(ctx, o, minMs / 1e3, [&] {
            return whale_rt_attention(ctx, q, k, v, scale, 1, o) == WHALE_RT_OK;
          });
          both = timeIt(ctx, dq, minMs / 1e3, [&] {
            return whale_rt_attention(ctx, q, k, v, scale, 1, o) ==
                       WHALE_RT_OK &&
                   whale_rt_attention_grad(ctx, q, k, v, o, dout, scale, 1, dq,
                                           dk, dv) == WHALE_RT_OK;
          });
        }
      }
      char name[64];
      std::snprintf(name, sizeof name, "%ldx%ldx%ldx%ld", long(d.b), long(d.h),
                    long(d.t), long(d.e));
      if (fwd < 0 || both < 0) {
        std::printf("%-22s %-6s failed: %s\n", name, path,
                    whale_rt_last_error(ctx));
        status = 1;
      } else {
        // Causal: half of the 4 b h t^2 e FLOPs of the two products.
        const double flops = 2.0 * d.b * d.h * double(d.t) * d.t * d.e;
        std::printf("%-22s %-6s %10.3f %12.3f %10.1f %11.1f MiB\n", name, path,
                    fwd * 1e3, both * 1e3, flops / fwd / 1e12,
                    whale_rt_memory_peak(ctx) / 1048576.0);
      }
      whale_rt_context_destroy(ctx);
    }
  unsetenv("WHALE_CUDA_FLASH");
  return status;
}
