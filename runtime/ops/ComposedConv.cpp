//===- ComposedConv.cpp - convolutions composed of a device's own ops -----===//
//
// What a device without a convolution kernel of its own runs, and the
// reference one would be tested against: the im2col matrices of a chunk of
// samples side by side, times the weights in one batched matmul (the groups
// as its batch), then the result's sample and channel dimensions swapped
// into NCHW. One large GEMM per chunk rather than one small one per sample:
// on the CPU that took a ResNet-50 step from 0.21x to about 0.26x of
// PyTorch's speed (bench/resnet_cpu.py, docs/performance.md). Chunks keep
// the column matrices within kColumnBytes.
// The backward pass is the same product's gradients and col2im.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Device.h"

#include <algorithm>

namespace whale::rt {
namespace {

/// The most bytes a chunk's column matrices take.
constexpr int64_t kColumnBytes = int64_t(64) << 20;

/// A convolution's extents: x [N, C, H, W], w [O, C / G, KH, KW],
/// y [N, O, OH, OW].
struct ConvDims {
  int64_t n, c, h, w, o, groups, kh, kw, oh, ow;
  int64_t k() const { return c / groups * kh * kw; } ///< a group's rows
  int64_t positions() const { return oh * ow; }
  int64_t inputSample() const { return c * h * w; }
  int64_t outputSample() const { return o * oh * ow; }
  /// Samples per chunk: at least one, the columns within kColumnBytes.
  int64_t chunk() const {
    int64_t perSample = std::max<int64_t>(1, groups * k() * positions() * 4);
    return std::clamp<int64_t>(kColumnBytes / perSample, 1, n);
  }
};

ConvDims dimsOf(const View<const float> &x, const View<const float> &w,
                int64_t groups, const Shape &y) {
  return {x.shape[0], x.shape[1], x.shape[2], x.shape[3], w.shape[0],
          groups,     w.shape[2], w.shape[3], y[2],       y[3]};
}

/// `win` with the kernel's extent of weights `w`.
Window2d withKernel(Window2d win, const View<const float> &w) {
  win.kernelH = w.shape[2];
  win.kernelW = w.shape[3];
  return win;
}

/// Samples [n0, n0 + s) of x as im2col matrices side by side in `cols`
/// [G, K, s * L]: sample i's columns start at i * L in every row.
Status columns(Device &dev, const View<const float> &x, const ConvDims &d,
               const Window2d &k, int64_t n0, int64_t s, float *cols) {
  const int64_t stride = s * d.positions();
  for (int64_t i = 0; i < s; ++i)
    if (Status st = dev.im2col(
            {x.data + (n0 + i) * d.inputSample(), {d.c, d.h, d.w}}, k,
            cols + i * d.positions(), stride);
        !st)
      return st;
  return Status::ok();
}

} // namespace

Status Device::conv2d(View<const float> x, View<const float> w,
                      const Window2d &win, int64_t groups, View<float> y) {
  const ConvDims d = dimsOf(x, w, groups, y.shape);
  const Window2d k = withKernel(win, w);
  const int64_t chunk = d.chunk(), og = d.o / d.groups;
  Tensor cols, product;
  if (Status st = Tensor::create(*this, DType::F32,
                                 {d.groups, d.k(), chunk * d.positions()},
                                 cols);
      !st)
    return st;
  if (Status st = Tensor::create(*this, DType::F32,
                                 {d.groups, og, chunk * d.positions()},
                                 product);
      !st)
    return st;
  const View<const float> weights{w.data, {d.groups, og, d.k()}};
  for (int64_t n0 = 0; n0 < d.n; n0 += chunk) {
    const int64_t s = std::min(chunk, d.n - n0), span = s * d.positions();
    float *c = cols.view<float>().data, *p = product.view<float>().data;
    if (Status st = columns(*this, x, d, k, n0, s, c); !st)
      return st;
    // [G, O/G, K] x [G, K, s L] -> [G, O/G, s L], which is [O, s, L]:
    // swapped into the chunk's [s, O, L].
    if (Status st = matmul(weights, {c, {d.groups, d.k(), span}},
                           {p, {d.groups, og, span}}, false, false);
        !st)
      return st;
    if (Status st = transpose({p, {d.o, s, d.positions()}}, {1, 0, 2},
                              {y.data + n0 * d.outputSample(),
                               {s, d.o, d.positions()}});
        !st)
      return st;
  }
  return Status::ok();
}

Status Device::conv2dBackward(View<const float> x, View<const float> w,
                              View<const float> dy, const Window2d &win,
                              int64_t groups, View<float> *dx,
                              View<float> *dw) {
  const ConvDims d = dimsOf(x, w, groups, dy.shape);
  const Window2d k = withKernel(win, w);
  const int64_t chunk = d.chunk(), og = d.o / d.groups;
  const Shape wShape = {d.groups, og, d.k()};
  Tensor cols, dcols, dyT, dwChunk;
  for (auto [t, shape] :
       {std::pair{&cols, Shape{d.groups, d.k(), chunk * d.positions()}},
        std::pair{&dcols, Shape{d.groups, d.k(), chunk * d.positions()}},
        std::pair{&dyT, Shape{d.groups, og, chunk * d.positions()}},
        std::pair{&dwChunk, wShape}})
    if (Status st = Tensor::create(*this, DType::F32, shape, *t); !st)
      return st;
  const View<const float> weights{w.data, wShape};
  for (int64_t n0 = 0; n0 < d.n; n0 += chunk) {
    const int64_t s = std::min(chunk, d.n - n0), span = s * d.positions();
    float *c = cols.view<float>().data, *dc = dcols.view<float>().data,
          *g = dyT.view<float>().data;
    // The chunk's dy [s, O, L] as [O, s, L] = [G, O/G, s L].
    if (Status st = transpose(
            {dy.data + n0 * d.outputSample(), {s, d.o, d.positions()}},
            {1, 0, 2}, {g, {d.o, s, d.positions()}});
        !st)
      return st;
    if (dw)
      if (Status st = columns(*this, x, d, k, n0, s, c); !st)
        return st;
    // The first chunk's weight gradient goes straight into dw, the others
    // are added to it, in order.
    View<float> dwOut{n0 == 0 && dw ? dw->data : dwChunk.view<float>().data,
                      wShape};
    View<float> dcolsOut{dc, {d.groups, d.k(), span}};
    if (Status st = matmulBackward(
            weights, {c, {d.groups, d.k(), span}}, {g, {d.groups, og, span}},
            dw ? &dwOut : nullptr, dx ? &dcolsOut : nullptr, false, false);
        !st)
      return st;
    if (dw && n0 > 0)
      if (Status st = binary(BinaryOp::Add, {dw->data, wShape},
                             dwChunk.cview<float>(), {dw->data, wShape});
          !st)
        return st;
    if (dx)
      for (int64_t i = 0; i < s; ++i)
        if (Status st = col2im(dc + i * d.positions(), span, k,
                               {dx->data + (n0 + i) * d.inputSample(),
                                {d.c, d.h, d.w}});
            !st)
          return st;
  }
  return Status::ok();
}

} // namespace whale::rt
