//===- Conv.cpp - convolutions composed of a device's own ops -------------===//
//
// What a device without a convolution kernel of its own runs, and the
// reference one would be tested against: each sample's im2col matrix times
// the weights, the groups as the batch of one batched matmul. The backward
// pass is the same products' gradients and col2im.
//
//===----------------------------------------------------------------------===//

#include "runtime/Device.h"

namespace whale::rt {
namespace {

/// The shapes of one sample's products: weights [G, O/G, K], columns
/// [G, K, L] and output [G, O/G, L], K = C/G * KH * KW, L = OH * OW.
struct ConvDims {
  int64_t n, c, h, w, o, groups, kh, kw, oh, ow;
  Shape weights() const { return {groups, o / groups, c / groups * kh * kw}; }
  Shape columns() const { return {groups, c / groups * kh * kw, oh * ow}; }
  Shape output() const { return {groups, o / groups, oh * ow}; }
  Shape planes() const { return {c, h, w}; }
  int64_t inputSample() const { return c * h * w; }
  int64_t outputSample() const { return o * oh * ow; }
};

ConvDims dimsOf(const View<const float> &x, const View<const float> &w,
                int64_t groups, const View<const float> &y) {
  return {x.shape[0], x.shape[1], x.shape[2], x.shape[3], w.shape[0],
          groups,     w.shape[2], w.shape[3], y.shape[2], y.shape[3]};
}

/// `win` with the kernel's extent of weights `w`.
Window2d withKernel(Window2d win, const View<const float> &w) {
  win.kernelH = w.shape[2];
  win.kernelW = w.shape[3];
  return win;
}

} // namespace

Status Device::conv2d(View<const float> x, View<const float> w,
                      const Window2d &win, int64_t groups, View<float> y) {
  const ConvDims d = dimsOf(x, w, groups, {y.data, y.shape});
  const Window2d k = withKernel(win, w);
  Tensor cols;
  if (Status st = Tensor::create(*this, DType::F32, d.columns(), cols); !st)
    return st;
  const View<const float> weights{w.data, d.weights()};
  for (int64_t n = 0; n < d.n; ++n) {
    View<const float> planes{x.data + n * d.inputSample(), d.planes()};
    if (Status st = im2col(planes, k,
                           {cols.view<float>().data,
                            {d.groups * d.columns()[1], d.columns()[2]}});
        !st)
      return st;
    if (Status st = matmul(weights, cols.cview<float>(),
                           {y.data + n * d.outputSample(), d.output()}, false,
                           false);
        !st)
      return st;
  }
  return Status::ok();
}

Status Device::conv2dBackward(View<const float> x, View<const float> w,
                              View<const float> dy, const Window2d &win,
                              int64_t groups, View<float> *dx,
                              View<float> *dw) {
  const ConvDims d = dimsOf(x, w, groups, dy);
  const Window2d k = withKernel(win, w);
  Tensor cols, dcols, dwSample;
  if (Status st = Tensor::create(*this, DType::F32, d.columns(), cols); !st)
    return st;
  if (Status st = Tensor::create(*this, DType::F32, d.columns(), dcols); !st)
    return st;
  if (Status st = Tensor::create(*this, DType::F32, d.weights(), dwSample);
      !st)
    return st;
  const View<const float> weights{w.data, d.weights()};
  const Shape flatColumns = {d.groups * d.columns()[1], d.columns()[2]};
  for (int64_t n = 0; n < d.n; ++n) {
    View<const float> planes{x.data + n * d.inputSample(), d.planes()};
    View<const float> dout{dy.data + n * d.outputSample(), d.output()};
    if (dw)
      if (Status st =
              im2col(planes, k, {cols.view<float>().data, flatColumns});
          !st)
        return st;
    // The first sample's weight gradient goes straight into dw, the others
    // are added to it.
    View<float> dwOut{n == 0 && dw ? dw->data : dwSample.view<float>().data,
                      d.weights()};
    View<float> dcolsOut = dcols.view<float>();
    if (Status st = matmulBackward(weights, cols.cview<float>(), dout,
                                   dw ? &dwOut : nullptr,
                                   dx ? &dcolsOut : nullptr, false, false);
        !st)
      return st;
    if (dw && n > 0)
      if (Status st = binary(BinaryOp::Add, {dw->data, d.weights()},
                             dwSample.cview<float>(), {dw->data, d.weights()});
          !st)
        return st;
    if (dx)
      if (Status st = col2im({dcols.cview<float>().data, flatColumns}, k,
                             {dx->data + n * d.inputSample(), d.planes()});
          !st)
        return st;
  }
  return Status::ok();
}

} // namespace whale::rt
