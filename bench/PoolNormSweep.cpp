//===- PoolNormSweep.cpp - pooling and batch norm: ours against oneDNN's --===//
//
// Issue 91 asks whether a CPU device's pooling and batch normalization
// should run through oneDNN, as its convolutions do, or through Whale's
// own kernels (runtime/cpu/Pooling.cpp, runtime/cpu/BatchNorm.cpp),
// whichever is measured faster. This times both at ResNet-50's shapes, the
// forward and the backward of each, with the same threads:
//   whale        the runtime's kernel, through the C API the rank programs
//                call (NCHW, Whale's only layout);
//   dnnl nchw    oneDNN's primitive on the same NCHW tensors (what calling
//                it in place of ours would run, no reorders);
//   dnnl blocked oneDNN's primitive on its channel-blocked layout (nChw16c),
//                the reorders into and out of it left out: what it reaches
//                only if blocked layouts were kept between layers.
// Primitives are created once per shape, outside the time; each figure is
// the mean of back-to-back calls over --min-ms after two untimed ones.
//
//   whale-pool-norm-sweep [--size 64] [--batch 8] [--threads 2]
//                         [--min-ms 200]
//
//===----------------------------------------------------------------------===//

#include "CallTimer.h"
#include "runtime/WhaleRuntime.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

struct Options {
  int64_t size = 64, batch = 8;
  int threads = 2;
  double minSeconds = 0.2;
};

/// A tensor of Whale's runtime, released with its context.
struct RtTensor {
  whale_rt_context *ctx;
  whale_rt_tensor *t = nullptr;
  RtTensor(whale_rt_context *c, std::vector<int64_t> shape, double fill)
      : ctx(c) {
    if (whale_rt_tensor_create(ctx, WHALE_RT_F32, int32_t(shape.size()),
                               shape.data(), &t) != WHALE_RT_OK ||
        whale_rt_fill(ctx, t, fill) != WHALE_RT_OK) {
      std::fprintf(stderr, "whale-pool-norm-sweep: cannot make a tensor\n");
      std::exit(1);
    }
  }
  ~RtTensor() { whale_rt_tensor_release(ctx, t); }
};

/// The mean seconds of `step` (which returns false on failure).
template <class Step> double timed(Step step, const Options &o) {
  return whale::bench::secondsPerCall(
      step, [] { return true; }, o.minSeconds,
      /*batch=*/4);
}

/// The mean seconds of running `primitive` on `args`, waited for.
double timedPrimitive(const dnnl::primitive &primitive,
                      const dnnl::engine &engine,
                      const std::unordered_map<int, memory> &args,
                      const Options &o) {
  dnnl::stream s(engine);
  return timed(
      [&] {
        primitive.execute(s, args);
        s.wait();
        return true;
      },
      o);
}

/// oneDNN memory of `dims` in `tag`, filled with `value`.
memory filled(const dnnl::engine &engine, const memory::dims &dims, Tag tag,
              float value) {
  memory m({dims, memory::data_type::f32, tag}, engine);
  const size_t count = m.get_desc().get_size() / sizeof(float);
  float *p = static_cast<float *>(m.get_data_handle());
  for (size_t i = 0; i < count; ++i)
    p[i] = value + float(i % 7) * 0.125f;
  return m;
}

void printRow(const std::string &what, const char *path, double forward,
              double backward) {
  std::printf("%-34s %-13s %10.1f %10.1f %10.1f\n", what.c_str(), path,
              forward * 1e6, backward * 1e6, (forward + backward) * 1e6);
}

/// Max pooling, 3 x 3 at stride 2, padding 1 (ResNet's stem).
void maxPool(whale_rt_context *ctx, const dnnl::engine &engine,
             const memory::dims &in, const Options &o) {
  const memory::dims out = {in[0], in[1], (in[2] + 2 - 3) / 2 + 1,
                            (in[3] + 2 - 3) / 2 + 1};
  const std::string what = "max pool 3x3/2 " + std::to_string(in[0]) + "x" +
                           std::to_string(in[1]) + "x" + std::to_string(in[2]) +
                           "x" + std::to_string(in[3]);
  {
    RtTensor x(ctx, {in[0], in[1], in[2], in[3]}, 0.5),
        y(ctx, {out[0], out[1], out[2], out[3]}, 0),
        dy(ctx, {out[0], out[1], out[2], out[3]}, 0.25),
        dx(ctx, {in[0], in[1], in[2], in[3]}, 0);
    const int64_t geometry[6] = {3, 3, 2, 2, 1, 1};
    const double f = timed(
        [&] {
          return whale_rt_pool2d(ctx, WHALE_RT_POOL_MAX, x.t, geometry, y.t) ==
                 WHALE_RT_OK;
        },
        o);
    const double b = timed(
        [&] {
          return whale_rt_pool2d_grad(ctx, WHALE_RT_POOL_MAX, x.t, dy.t,
                                      geometry, dx.t) == WHALE_RT_OK;
        },
        o);
    printRow(what, "whale", f, b);
  }
  for (Tag tag : {Tag::nchw, Tag::nChw16c}) {
    memory x = filled(engine, in, tag, 0.5f), dy = filled(engine, out, tag, 0);
    memory::desc yd(out, memory::data_type::f32, tag);
    const memory::dims stride = {2, 2}, kernel = {3, 3}, pad = {1, 1};
    const auto max = dnnl::algorithm::pooling_max;
    dnnl::pooling_forward::primitive_desc fpd(
        {dnnl::prop_kind::forward_training, max, x.get_desc(), yd, stride,
         kernel, pad, pad},
        engine);
    dnnl::pooling_backward::primitive_desc bpd(
        {max, x.get_desc(), yd, stride, kernel, pad, pad}, engine, fpd);
    memory y(fpd.dst_desc(), engine), ws(fpd.workspace_desc(), engine),
        dx(bpd.diff_src_desc(), engine);
    const double f = timedPrimitive(
        dnnl::pooling_forward(fpd), engine,
        {{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, y}, {DNNL_ARG_WORKSPACE, ws}}, o);
    const double b = timedPrimitive(dnnl::pooling_backward(bpd), engine,
                                    {{DNNL_ARG_DIFF_DST, dy},
                                     {DNNL_ARG_DIFF_SRC, dx},
                                     {DNNL_ARG_WORKSPACE, ws}},
                                    o);
    printRow(what, tag == Tag::nchw ? "dnnl nchw" : "dnnl blocked", f, b);
  }
}

/// Batch normalization while training: the batch's statistics, scale and
/// shift, forward and backward (dx, dgamma, dbeta).
void batchNorm(whale_rt_context *ctx, const dnnl::engine &engine,
               const memory::dims &in, const Options &o) {
  const std::string what = "batch norm " + std::to_string(in[0]) + "x" +
                           std::to_string(in[1]) + "x" + std::to_string(in[2]) +
                           "x" + std::to_string(in[3]);
  const double eps = 1e-5;
  {
    RtTensor x(ctx, {in[0], in[1], in[2], in[3]}, 0.5),
        y(ctx, {in[0], in[1], in[2], in[3]}, 0),
        dy(ctx, {in[0], in[1], in[2], in[3]}, 0.25),
        dx(ctx, {in[0], in[1], in[2], in[3]}, 0), gamma(ctx, {in[1]}, 1),
        beta(ctx, {in[1]}, 0), runMean(ctx, {in[1]}, 0),
        runVar(ctx, {in[1]}, 1), mean(ctx, {in[1]}, 0), invstd(ctx, {in[1]}, 0),
        dgamma(ctx, {in[1]}, 0), dbeta(ctx, {in[1]}, 0);
    const double f = timed(
        [&] {
          return whale_rt_batch_norm(ctx, x.t, gamma.t, beta.t, runMean.t,
                                     runVar.t, 0.1, eps, 1, y.t, mean.t,
                                     invstd.t) == WHALE_RT_OK;
        },
        o);
    const double b = timed(
        [&] {
          return whale_rt_batch_norm_grad(ctx, x.t, gamma.t, mean.t, invstd.t,
                                          dy.t, dx.t, dgamma.t,
                                          dbeta.t) == WHALE_RT_OK;
        },
        o);
    printRow(what, "whale", f, b);
  }
  const auto flags = dnnl::normalization_flags::use_scale |
                     dnnl::normalization_flags::use_shift;
  for (Tag tag : {Tag::nchw, Tag::nChw16c}) {
    memory x = filled(engine, in, tag, 0.5f),
           dy = filled(engine, in, tag, 0.25f);
    dnnl::batch_normalization_forward::primitive_desc fpd(
        {dnnl::prop_kind::forward_training, x.get_desc(), float(eps), flags},
        engine);
    dnnl::batch_normalization_backward::primitive_desc bpd(
        {dnnl::prop_kind::backward, x.get_desc(), x.get_desc(), float(eps),
         flags},
        engine, fpd);
    const memory::dims channels = {in[1]};
    memory y(fpd.dst_desc(), engine), dx(bpd.diff_src_desc(), engine),
        scale = filled(engine, channels, Tag::x, 1),
        shift = filled(engine, channels, Tag::x, 0),
        mean(fpd.mean_desc(), engine), var(fpd.variance_desc(), engine),
        dscale = filled(engine, channels, Tag::x, 0),
        dshift = filled(engine, channels, Tag::x, 0);
    const double f =
        timedPrimitive(dnnl::batch_normalization_forward(fpd), engine,
                       {{DNNL_ARG_SRC, x},
                        {DNNL_ARG_DST, y},
                        {DNNL_ARG_SCALE, scale},
                        {DNNL_ARG_SHIFT, shift},
                        {DNNL_ARG_MEAN, mean},
                        {DNNL_ARG_VARIANCE, var}},
                       o);
    const double b =
        timedPrimitive(dnnl::batch_normalization_backward(bpd), engine,
                       {{DNNL_ARG_SRC, x},
                        {DNNL_ARG_MEAN, mean},
                        {DNNL_ARG_VARIANCE, var},
                        {DNNL_ARG_DIFF_DST, dy},
                        {DNNL_ARG_SCALE, scale},
                        {DNNL_ARG_SHIFT, shift},
                        {DNNL_ARG_DIFF_SRC, dx},
                        {DNNL_ARG_DIFF_SCALE, dscale},
                        {DNNL_ARG_DIFF_SHIFT, dshift}},
                       o);
    printRow(what, tag == Tag::nchw ? "dnnl nchw" : "dnnl blocked", f, b);
  }
}

int usage() {
  std::fprintf(stderr, "usage: whale-pool-norm-sweep [--size 64] [--batch 8] "
                       "[--threads 2] [--min-ms 200]\n");
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!v)
      return usage();
    const long long n = std::atoll(v);
    if (!std::strcmp(argv[i], "--size") && n >= 32 && n <= 1024)
      o.size = n;
    else if (!std::strcmp(argv[i], "--batch") && n >= 1 && n <= 1024)
      o.batch = n;
    else if (!std::strcmp(argv[i], "--threads") && n >= 1 && n <= 256)
      o.threads = int(n);
    else if (!std::strcmp(argv[i], "--min-ms") && n >= 1)
      o.minSeconds = double(n) / 1e3;
    else
      return usage();
    ++i;
  }
  whale_rt_context *ctx = nullptr;
  char why[640] = "";
  if (whale_rt_context_open("cpu", o.threads, 0, 1, &ctx, why, sizeof why) !=
      WHALE_RT_OK) {
    std::fprintf(stderr, "whale-pool-norm-sweep: cpu: %s\n", why);
    return 1;
  }
  omp_set_num_threads(o.threads);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  std::printf("ResNet-50's pooling and batch norms at %lld x %lld, batch "
              "%lld, %d threads; microseconds a call\n",
              (long long)o.size, (long long)o.size, (long long)o.batch,
              o.threads);
  std::printf("%-34s %-13s %10s %10s %10s\n", "op", "path", "forward",
              "backward", "both");
  const int64_t n = o.batch, s = o.size;
  // The stem: a 7 x 7 convolution at stride 2 makes 64 planes of s / 2,
  // which the max pool halves; then four stages of bottlenecks at s / 4 to
  // s / 32, their batch norms over 64-512 planes inside and 256-2048 at
  // their ends.
  maxPool(ctx, engine, {n, 64, s / 2, s / 2}, o);
  batchNorm(ctx, engine, {n, 64, s / 2, s / 2}, o);
  const int64_t widths[4] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t side = s / (4 << stage);
    batchNorm(ctx, engine, {n, widths[stage], side, side}, o);
    batchNorm(ctx, engine, {n, 4 * widths[stage], side, side}, o);
  }
  whale_rt_context_destroy(ctx);
  return 0;
}
