//===- Conv.cpp - im2col, col2im and pooling on the CPU -------------------===//
//
// Loops over support/ConvMath.h's per-element functions, split over the
// device's threads. Convolutions go through oneDNN where it is built in
// (cpu/DnnlConv.h); else their GEMMs are the device's matmul
// (runtime/ops/ComposedConv.cpp).
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/CpuDevice.h"
#include "runtime/cpu/DnnlConv.h"

#include <algorithm>

namespace whale::rt {

Status CpuDevice::im2col(View<const float> x, const Window2d &w, float *cols,
                         int64_t rowStride) {
  const Planes p = samplePlanes(x.shape, w);
  const int64_t rows = p.channels * w.kernelH * w.kernelW,
                positions = p.outH * p.outW;
  pool().parallelFor(rows, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < positions; ++c)
        cols[r * rowStride + c] = im2colAt(x.data, p, w, r, c);
  });
  return Status::ok();
}

Status CpuDevice::col2im(const float *cols, int64_t rowStride,
                         const Window2d &w, View<float> dx) {
  const Planes p = samplePlanes(dx.shape, w);
  pool().parallelFor(p.channels * p.height, 1, [&](int64_t l0, int64_t l1) {
    for (int64_t line = l0; line < l1; ++line) {
      int64_t c = line / p.height, h = line % p.height;
      for (int64_t x = 0; x < p.width; ++x)
        dx.data[line * p.width + x] =
            col2imAt(cols, rowStride, p, w, c, h, x);
    }
  });
  return Status::ok();
}

Status CpuDevice::pool2d(bool max, View<const float> x, const Window2d &w,
                         View<float> y) {
  const Planes p = planesOf(x.shape, y.shape);
  pool().parallelFor(p.channels, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const float *plane = x.data + c * p.height * p.width;
      float *out = y.data + c * p.outH * p.outW;
      for (int64_t oh = 0; oh < p.outH; ++oh)
        for (int64_t ow = 0; ow < p.outW; ++ow)
          out[oh * p.outW + ow] = poolAt(max, plane, p, w, oh, ow);
    }
  });
  return Status::ok();
}

Status CpuDevice::pool2dBackward(bool max, View<const float> x,
                                 View<const float> dy, const Window2d &w,
                                 View<float> dx) {
  // Each window hands its gradient to the input it took (its maximum, or
  // each tap a share of its mean): one pass over the windows, where
  // poolGradAt's gather (the GPU's: no atomics) finds every window's
  // maximum again for each input it covers (30 ms of a ResNet-50 step at
  // 64 x 64, batch 8, against under 1). Windows go last to first, the
  // order in which poolGradAt meets an input's readers: the same sums.
  const Planes p = planesOf(x.shape, dy.shape);
  const float share = 1.0f / static_cast<float>(w.kernelH * w.kernelW);
  pool().parallelFor(p.channels, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const float *plane = x.data + c * p.height * p.width;
      const float *g = dy.data + c * p.outH * p.outW;
      float *out = dx.data + c * p.height * p.width;
      std::fill(out, out + p.height * p.width, 0.0f);
      for (int64_t oh = p.outH - 1; oh >= 0; --oh)
        for (int64_t ow = p.outW - 1; ow >= 0; --ow) {
          const float d = g[oh * p.outW + ow];
          if (max) {
            if (int64_t at = windowArgmax(plane, p, w, oh, ow); at >= 0)
              out[at] += d;
          } else {
            forEachTap(p, w, oh, ow, [&](int64_t at) { out[at] += d * share; });
          }
        }
    }
  });
  return Status::ok();
}

DnnlConv *CpuDevice::dnnl() {
  static const bool enabled = DnnlConv::enabled();
  if (!enabled)
    return nullptr;
  if (!dnnl_)
    dnnl_ = std::make_unique<DnnlConv>(pool_);
  return dnnl_.get();
}

Status CpuDevice::conv2d(View<const float> x, View<const float> w,
                         const Window2d &win, int64_t groups, View<float> y) {
  if (DnnlConv *d = dnnl())
    return d->forward(x, w, win, groups, y);
  return Device::conv2d(x, w, win, groups, y);
}

Status CpuDevice::conv2dBackward(View<const float> x, View<const float> w,
                                 View<const float> dy, const Window2d &win,
                                 int64_t groups, View<float> *dx,
                                 View<float> *dw) {
  if (DnnlConv *d = dnnl())
    return d->backward(x, w, dy, win, groups, dx, dw);
  return Device::conv2dBackward(x, w, dy, win, groups, dx, dw);
}

} // namespace whale::rt
