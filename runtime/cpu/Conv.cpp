//===- Conv.cpp - im2col and col2im on the CPU ----------------------------===//
//
// Loops over support/ConvMath.h's per-element functions, split over the
// device's threads. Convolutions go through oneDNN where it is built in
// (cpu/DnnlConv.h); else their GEMMs are the device's matmul
// (runtime/ops/ComposedConv.cpp). Pooling is cpu/Pooling.cpp.
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
