//===- ConvMath.h - what one element of a convolution or a pooling is -*- C++
//-*-===//
//
// The index arithmetic of 2-D convolutions (as im2col and its adjoint
// col2im) and of pooling, one output element per call. The CPU device runs
// these functions in its loops and the CUDA kernels in theirs, so both
// devices compute the same thing and the GPU's indexing is checked on
// machines without one. Each output element is a gather (no atomics), so
// the backward passes are deterministic on both.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_SUPPORT_CONVMATH_H
#define WHALE_SUPPORT_CONVMATH_H

#include <cstddef>
#include <cstdint>

#ifdef __CUDACC__
#define WHALE_CONV_HD __host__ __device__ inline
#else
#define WHALE_CONV_HD inline
#endif

namespace whale::rt {

/// The largest kernel, stride, padding or dilation a window may have, and
/// the largest input extent it slides over: with each at most 2^30, every
/// sum and product of the shape rule (in + 2 pad - dilation (kernel - 1))
/// stays far inside int64, and no window is larger than any tensor.
inline constexpr int64_t kMaxWindowValue = int64_t(1) << 30;

/// A window over the last two dimensions of an NCHW tensor: the kernel's
/// extent, the stride, the zero padding on each side and the dilation.
struct Window2d {
  int64_t kernelH = 1, kernelW = 1, strideH = 1, strideW = 1;
  int64_t padH = 0, padW = 0, dilationH = 1, dilationW = 1;

  /// Whether every value is at most kMaxWindowValue (the shape rule's
  /// arithmetic cannot overflow; the callers name the refusal).
  WHALE_CONV_HD bool withinLimits() const {
    return kernelH <= kMaxWindowValue && kernelW <= kMaxWindowValue &&
           strideH <= kMaxWindowValue && strideW <= kMaxWindowValue &&
           padH <= kMaxWindowValue && padW <= kMaxWindowValue &&
           dilationH <= kMaxWindowValue && dilationW <= kMaxWindowValue;
  }

  /// The output extent of an input extent `in`, or 0 when the window
  /// does not fit (the span is tested before dividing: C++ division
  /// truncates a negative one towards zero).
  WHALE_CONV_HD int64_t outH(int64_t in) const {
    return outExtent(in, kernelH, strideH, padH, dilationH);
  }
  WHALE_CONV_HD int64_t outW(int64_t in) const {
    return outExtent(in, kernelW, strideW, padW, dilationW);
  }
  WHALE_CONV_HD static int64_t outExtent(int64_t in, int64_t kernel,
                                         int64_t stride, int64_t pad,
                                         int64_t dilation) {
    // Out of the limits the arithmetic below could wrap: it does not fit.
    if (in > kMaxWindowValue || kernel > kMaxWindowValue ||
        pad > kMaxWindowValue || dilation > kMaxWindowValue ||
        stride > kMaxWindowValue)
      return 0;
    int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1;
    return span < 0 ? 0 : span / stride + 1;
  }
};

/// One sample's planes: `channels` of [height, width], and the output's.
struct Planes {
  int64_t channels = 0, height = 0, width = 0, outH = 0, outW = 0;
};

/// The planes of x [..., H, W] (every leading dimension counted as
/// channels) and of its output `out` [..., OH, OW].
template <class Dims> Planes planesOf(const Dims &x, const Dims &out) {
  Planes p;
  p.channels = 1;
  for (std::size_t d = 0; d + 2 < x.size(); ++d)
    p.channels *= x[d];
  p.height = x[x.size() - 2];
  p.width = x[x.size() - 1];
  p.outH = out[out.size() - 2];
  p.outW = out[out.size() - 1];
  return p;
}

/// The planes of one sample x [C, H, W] under window `w`.
template <class Dims> Planes samplePlanes(const Dims &x, const Window2d &w) {
  return {x[0], x[1], x[2], w.outH(x[1]), w.outW(x[2])};
}

/// Element (row, col) of the im2col matrix [channels * KH * KW, outH * outW]
/// of planes `x`: the input under kernel tap (i, j) of channel c at output
/// position (oh, ow), or 0 in the padding.
WHALE_CONV_HD float im2colAt(const float *x, const Planes &p,
                             const Window2d &w, int64_t row, int64_t col) {
  int64_t j = row % w.kernelW, i = (row / w.kernelW) % w.kernelH,
          c = row / (w.kernelW * w.kernelH);
  int64_t ow = col % p.outW, oh = col / p.outW;
  int64_t h = oh * w.strideH - w.padH + i * w.dilationH;
  int64_t x0 = ow * w.strideW - w.padW + j * w.dilationW;
  if (h < 0 || h >= p.height || x0 < 0 || x0 >= p.width)
    return 0.0f;
  return x[(c * p.height + h) * p.width + x0];
}

/// Calls fn(i, j, oh, ow) for every kernel tap (i, j) and output position
/// (oh, ow) whose window reads input element (h, x): what a gradient
/// gathers from.
template <class Fn>
WHALE_CONV_HD void forEachReader(const Planes &p, const Window2d &w, int64_t h,
                                 int64_t x, Fn fn) {
  for (int64_t i = 0; i < w.kernelH; ++i) {
    int64_t th = h + w.padH - i * w.dilationH;
    if (th < 0 || th % w.strideH != 0 || th / w.strideH >= p.outH)
      continue;
    for (int64_t j = 0; j < w.kernelW; ++j) {
      int64_t tw = x + w.padW - j * w.dilationW;
      if (tw < 0 || tw % w.strideW != 0 || tw / w.strideW >= p.outW)
        continue;
      fn(i, j, th / w.strideH, tw / w.strideW);
    }
  }
}

/// Element (c, h, x) of the adjoint of im2col: the sum of every entry of
/// `cols` (its rows `rowStride` apart) that im2col read from that input
/// element.
WHALE_CONV_HD float col2imAt(const float *cols, int64_t rowStride,
                             const Planes &p, const Window2d &w, int64_t c,
                             int64_t h, int64_t x) {
  float sum = 0.0f;
  forEachReader(p, w, h, x, [&](int64_t i, int64_t j, int64_t oh, int64_t ow) {
    int64_t row = (c * w.kernelH + i) * w.kernelW + j;
    sum += cols[row * rowStride + oh * p.outW + ow];
  });
  return sum;
}

/// Calls fn(position) for each tap of window (oh, ow) inside the input,
/// position = h * width + x, in row-major order.
template <class Fn>
WHALE_CONV_HD void forEachTap(const Planes &p, const Window2d &w, int64_t oh,
                              int64_t ow, Fn fn) {
  for (int64_t i = 0; i < w.kernelH; ++i) {
    int64_t h = oh * w.strideH - w.padH + i * w.dilationH;
    if (h < 0 || h >= p.height)
      continue;
    for (int64_t j = 0; j < w.kernelW; ++j) {
      int64_t x = ow * w.strideW - w.padW + j * w.dilationW;
      if (x >= 0 && x < p.width)
        fn(h * p.width + x);
    }
  }
}

/// The input position of the maximum of window (oh, ow) of `plane` (the
/// first in row-major order among equals), as h * width + x; -1 when the
/// window lies wholly in the padding.
WHALE_CONV_HD int64_t windowArgmax(const float *plane, const Planes &p,
                                   const Window2d &w, int64_t oh, int64_t ow) {
  int64_t best = -1;
  float bestValue = 0.0f;
  forEachTap(p, w, oh, ow, [&](int64_t at) {
    float v = plane[at];
    // A NaN wins and stays, so that it spreads as it would through max.
    if (best < 0 || (bestValue == bestValue && (v > bestValue || v != v))) {
      best = at;
      bestValue = v;
    }
  });
  return best;
}

/// Output (oh, ow) of pooling `plane`: the maximum of the window, or its
/// mean over the whole kernel (padding counted as zeros, as PyTorch's
/// avg_pool2d counts it by default).
WHALE_CONV_HD float poolAt(bool max, const float *plane, const Planes &p,
                           const Window2d &w, int64_t oh, int64_t ow) {
  if (max) {
    int64_t at = windowArgmax(plane, p, w, oh, ow);
    return at < 0 ? 0.0f : plane[at];
  }
  float sum = 0.0f;
  forEachTap(p, w, oh, ow, [&](int64_t at) { sum += plane[at]; });
  return sum / static_cast<float>(w.kernelH * w.kernelW);
}

/// Element (h, x) of the gradient of pooling `plane`, from the output
/// gradient `dy` of that plane: the windows that took it (as their maximum,
/// or a share of their mean) hand it their gradient.
WHALE_CONV_HD float poolGradAt(bool max, const float *plane, const float *dy,
                               const Planes &p, const Window2d &w, int64_t h,
                               int64_t x) {
  float sum = 0.0f;
  const float share = 1.0f / static_cast<float>(w.kernelH * w.kernelW);
  forEachReader(p, w, h, x, [&](int64_t, int64_t, int64_t oh, int64_t ow) {
    float g = dy[oh * p.outW + ow];
    if (!max)
      sum += g * share;
    else if (windowArgmax(plane, p, w, oh, ow) == h * p.width + x)
      sum += g;
  });
  return sum;
}

} // namespace whale::rt

#endif
