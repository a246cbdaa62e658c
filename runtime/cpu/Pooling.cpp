//===- Pooling.cpp - max and average pooling on the CPU -------------------===//
//
// The same values, bit for bit, as support/ConvMath.h's poolAt and the
// gather of poolGradAt (the GPU's kernels): the first maximum of a window
// in row-major order, a NaN winning and staying; a mean summed tap by tap
// in row-major order; each input's gradient summed over the windows that
// read it, last window first. What differs is the loop: a whole output row
// at a time, one kernel tap after another, each tap's columns found once
// (no test per element), so the compiler keeps the row in vectors: 2-3x
// faster than per element through poolAt at ResNet-50's max pools
// (bench/PoolNormSweep.cpp, figures in docs/performance.md). oneDNN's is
// faster still and not used: it drops a window's NaN and orders sums its
// own way, so a CPU and a GPU would part (docs/performance.md).
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/CpuDevice.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace whale::rt {

namespace {

/// Kernel column j of a window reads input column ow * strideW + offset
/// for the output columns ow in [lo, hi); the others fall in the padding.
struct TapColumns {
  int64_t lo = 0, hi = 0, offset = 0;
};

int64_t ceilDivClamped(int64_t a, int64_t b) {
  return a <= 0 ? 0 : (a + b - 1) / b;
}

std::vector<TapColumns> tapColumnsOf(const Planes &p, const Window2d &w) {
  std::vector<TapColumns> taps(w.kernelW);
  for (int64_t j = 0; j < w.kernelW; ++j) {
    TapColumns &t = taps[j];
    t.offset = j * w.dilationW - w.padW;
    // 0 <= ow * stride + offset < width.
    t.lo = std::min(p.outW, ceilDivClamped(-t.offset, w.strideW));
    t.hi = std::min(p.outW, ceilDivClamped(p.width - t.offset, w.strideW));
    t.hi = std::max(t.hi, t.lo);
  }
  return taps;
}

/// Whether output column ow has at least one tap inside the input (a
/// window wholly in the padding pools to 0 and takes no gradient).
std::vector<char> coveredColumns(const Planes &p,
                                 const std::vector<TapColumns> &taps) {
  std::vector<char> covered(p.outW, 0);
  for (const TapColumns &t : taps)
    std::fill(covered.begin() + t.lo, covered.begin() + t.hi, 1);
  return covered;
}

/// The input row of kernel row i for output row oh, or -1 in the padding.
int64_t tapRow(const Planes &p, const Window2d &w, int64_t oh, int64_t i) {
  int64_t h = oh * w.strideH - w.padH + i * w.dilationH;
  return h >= 0 && h < p.height ? h : -1;
}

/// Output row oh of max pooling `plane` into best (and, where `at` is not
/// null, each maximum's position h * width + x, -1 where every tap is
/// -inf or the window is empty: the caller asks windowArgmax then).
void maxRow(const float *plane, const Planes &p, const Window2d &w,
            const std::vector<TapColumns> &taps, int64_t oh, float *best,
            int32_t *at) {
  std::fill(best, best + p.outW, -INFINITY);
  if (at)
    std::fill(at, at + p.outW, -1);
  for (int64_t i = 0; i < w.kernelH; ++i) {
    const int64_t h = tapRow(p, w, oh, i);
    if (h < 0)
      continue;
    const float *row = plane + h * p.width;
    for (const TapColumns &t : taps) {
      const int64_t s = w.strideW, off = t.offset;
      // Taken when the best so far is a number and v is larger or NaN:
      // the first maximum stays, and so does the first NaN.
      if (at) {
        const int32_t base = static_cast<int32_t>(h * p.width + t.offset);
        for (int64_t ow = t.lo; ow < t.hi; ++ow) {
          const float v = row[ow * s + off], b = best[ow];
          const bool take = b == b && !(v <= b);
          best[ow] = take ? v : b;
          at[ow] = take ? base + static_cast<int32_t>(ow * s) : at[ow];
        }
      } else {
        for (int64_t ow = t.lo; ow < t.hi; ++ow) {
          const float v = row[ow * s + off], b = best[ow];
          best[ow] = b == b && !(v <= b) ? v : b;
        }
      }
    }
  }
}

/// Output row oh of average pooling `plane`: the taps summed in row-major
/// order, divided by the whole kernel's size (padding counted as zeros).
void meanRow(const float *plane, const Planes &p, const Window2d &w,
             const std::vector<TapColumns> &taps, int64_t oh, float *out) {
  std::fill(out, out + p.outW, 0.0f);
  for (int64_t i = 0; i < w.kernelH; ++i) {
    const int64_t h = tapRow(p, w, oh, i);
    if (h < 0)
      continue;
    const float *row = plane + h * p.width;
    for (const TapColumns &t : taps)
      for (int64_t ow = t.lo; ow < t.hi; ++ow)
        out[ow] += row[ow * w.strideW + t.offset];
  }
  const float size = static_cast<float>(w.kernelH * w.kernelW);
  for (int64_t ow = 0; ow < p.outW; ++ow)
    out[ow] = out[ow] / size;
}

/// Whether a plane's positions fit the int32 the max rows record.
bool positionsFitInt32(const Planes &p) {
  return p.height * p.width < (int64_t(1) << 31);
}

/// Planes a thread takes: about 16 KiB of input each.
int64_t poolingGrain(const Planes &p) {
  return std::max<int64_t>(1, 4096 / std::max<int64_t>(1, p.height * p.width));
}

} // namespace

Status CpuDevice::pool2d(bool max, View<const float> x, const Window2d &w,
                         View<float> y) {
  const Planes p = planesOf(x.shape, y.shape);
  const std::vector<TapColumns> taps = tapColumnsOf(p, w);
  const std::vector<char> covered = coveredColumns(p, taps);
  pool().parallelFor(p.channels, poolingGrain(p), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const float *plane = x.data + c * p.height * p.width;
      float *out = y.data + c * p.outH * p.outW;
      for (int64_t oh = 0; oh < p.outH; ++oh) {
        float *row = out + oh * p.outW;
        bool anyRow = false;
        for (int64_t i = 0; i < w.kernelH && !anyRow; ++i)
          anyRow = tapRow(p, w, oh, i) >= 0;
        if (!anyRow) {
          std::fill(row, row + p.outW, 0.0f);
          continue;
        }
        if (max) {
          maxRow(plane, p, w, taps, oh, row, nullptr);
          for (int64_t ow = 0; ow < p.outW; ++ow)
            if (!covered[ow])
              row[ow] = 0.0f;
        } else {
          meanRow(plane, p, w, taps, oh, row);
        }
      }
    }
  });
  return Status::ok();
}

Status CpuDevice::pool2dBackward(bool max, View<const float> x,
                                 View<const float> dy, const Window2d &w,
                                 View<float> dx) {
  // Each window hands its gradient to the input it took (its maximum, or
  // each tap a share of its mean): one pass over the windows, where
  // poolGradAt's gather finds every window's maximum again for each input
  // it covers. Windows go last row first, and within a row an input's
  // windows are met last column first (taps in ascending column order),
  // the order in which poolGradAt meets an input's readers: the same sums.
  const Planes p = planesOf(x.shape, dy.shape);
  const std::vector<TapColumns> taps = tapColumnsOf(p, w);
  const bool fits = positionsFitInt32(p);
  const float share = 1.0f / static_cast<float>(w.kernelH * w.kernelW);
  pool().parallelFor(p.channels, poolingGrain(p), [&](int64_t c0, int64_t c1) {
    std::vector<float> best(max ? p.outW : 0);
    std::vector<int32_t> at(max ? p.outW : 0);
    for (int64_t c = c0; c < c1; ++c) {
      const float *plane = x.data + c * p.height * p.width;
      const float *g = dy.data + c * p.outH * p.outW;
      float *out = dx.data + c * p.height * p.width;
      std::fill(out, out + p.height * p.width, 0.0f);
      for (int64_t oh = p.outH - 1; oh >= 0; --oh) {
        const float *gRow = g + oh * p.outW;
        if (!max) {
          for (int64_t i = 0; i < w.kernelH; ++i) {
            const int64_t h = tapRow(p, w, oh, i);
            if (h < 0)
              continue;
            float *row = out + h * p.width;
            for (const TapColumns &t : taps)
              for (int64_t ow = t.lo; ow < t.hi; ++ow)
                row[ow * w.strideW + t.offset] += gRow[ow] * share;
          }
          continue;
        }
        if (!fits) {
          for (int64_t ow = p.outW - 1; ow >= 0; --ow)
            if (int64_t a = windowArgmax(plane, p, w, oh, ow); a >= 0)
              out[a] += gRow[ow];
          continue;
        }
        maxRow(plane, p, w, taps, oh, best.data(), at.data());
        for (int64_t ow = p.outW - 1; ow >= 0; --ow) {
          // No tap was taken: every one is -inf (the first is the
          // maximum) or the window lies in the padding (none is).
          int64_t a = at[ow] >= 0 ? at[ow] : windowArgmax(plane, p, w, oh, ow);
          if (a >= 0)
            out[a] += gRow[ow];
        }
      }
    }
  });
  return Status::ok();
}

} // namespace whale::rt
