//===- RmsNorm.cpp - root-mean-square normalization over the last axis ----===//
//
// Llama's RMSNorm: y = x * rstd * weight, rstd = 1 / sqrt(mean(x * x) + eps)
// for each row of the last dimension. The backward recomputes rstd from x
// (the C ABI's promise: backward passes need only the forward's inputs):
//   xhat = x * rstd,  g = dy * weight,
//   dx = rstd * (g - xhat * mean(g * xhat)),  dweight = sum over rows of
//   dy * xhat.
// With a residual (whale.rms_norm_grad's `plus`), dx = residual + that, in
// the same pass over the row.
// Each row's sums are kept in kLanes partial sums added in lane order, and
// dweight's sums over rows in blocks of kRowsPerPart rows added in block
// order: a fixed order, whatever the threads, so every plan and every
// vector width the loops are cloned for sums alike.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/VectorClones.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace whale::rt::cpu {

namespace {

constexpr int64_t kLanes = 16;
constexpr int64_t kRowsPerPart = 32;

/// 1 / sqrt(mean(row * row) + eps).
template <class T>
WHALE_INLINE_LOOP T rowRstd(const T *__restrict in, int64_t d, double eps) {
  const int64_t whole = d - d % kLanes;
  T lane[kLanes] = {};
  for (int64_t j = 0; j < whole; j += kLanes)
    for (int64_t l = 0; l < kLanes; ++l)
      lane[l] += in[j + l] * in[j + l];
  for (int64_t j = whole; j < d; ++j)
    lane[j - whole] += in[j] * in[j];
  T sum = 0;
  for (int64_t l = 0; l < kLanes; ++l)
    sum += lane[l];
  return T(1) / std::sqrt(sum / T(d) + T(eps));
}

template <class T>
WHALE_INLINE_LOOP void rmsNormRows(const T *__restrict x, const T *__restrict w,
                                   double eps, T *__restrict y, int64_t d,
                                   int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const T *in = x + r * d;
    T *out = y + r * d;
    const T rs = rowRstd(in, d, eps);
    for (int64_t j = 0; j < d; ++j)
      out[j] = in[j] * rs * w[j];
  }
}

/// Rows [r0, r1) of the backward: dx, and their terms of dweight added
/// into `part`.
template <class T>
WHALE_INLINE_LOOP void
rmsNormBackwardRows(const T *__restrict x, const T *__restrict w, double eps,
                    const T *__restrict dy, const T *__restrict residual,
                    T *__restrict dx, T *__restrict part, int64_t d, int64_t r0,
                    int64_t r1) {
  const int64_t whole = d - d % kLanes;
  for (int64_t r = r0; r < r1; ++r) {
    const T *in = x + r * d, *g = dy + r * d;
    T *out = dx + r * d;
    const T rs = rowRstd(in, d, eps);
    T lane[kLanes] = {};
    for (int64_t j = 0; j < whole; j += kLanes)
      for (int64_t l = 0; l < kLanes; ++l) {
        T xhat = in[j + l] * rs;
        lane[l] += g[j + l] * w[j + l] * xhat;
        part[j + l] += g[j + l] * xhat;
      }
    for (int64_t j = whole; j < d; ++j) {
      T xhat = in[j] * rs;
      lane[j - whole] += g[j] * w[j] * xhat;
      part[j] += g[j] * xhat;
    }
    T sum = 0;
    for (int64_t l = 0; l < kLanes; ++l)
      sum += lane[l];
    const T meanGX = sum / T(d);
    if (!residual) {
      for (int64_t j = 0; j < d; ++j)
        out[j] = rs * (g[j] * w[j] - in[j] * rs * meanGX);
      continue;
    }
    // The residual's gradient added as the row is written: residual + dx,
    // the sum a separate add makes (no contraction: -ffp-contract=off).
    const T *res = residual + r * d;
    for (int64_t j = 0; j < d; ++j)
      out[j] = res[j] + rs * (g[j] * w[j] - in[j] * rs * meanGX);
  }
}

WHALE_VECTOR_CLONES void rmsNormRowsOf(const float *x, const float *w,
                                       double eps, float *y, int64_t d,
                                       int64_t r0, int64_t r1) {
  rmsNormRows(x, w, eps, y, d, r0, r1);
}
void rmsNormRowsOf(const double *x, const double *w, double eps, double *y,
                   int64_t d, int64_t r0, int64_t r1) {
  rmsNormRows(x, w, eps, y, d, r0, r1);
}

WHALE_VECTOR_CLONES void rmsNormBackwardRowsOf(const float *x, const float *w,
                                               double eps, const float *dy,
                                               const float *residual, float *dx,
                                               float *part, int64_t d,
                                               int64_t r0, int64_t r1) {
  rmsNormBackwardRows(x, w, eps, dy, residual, dx, part, d, r0, r1);
}
void rmsNormBackwardRowsOf(const double *x, const double *w, double eps,
                           const double *dy, const double *residual, double *dx,
                           double *part, int64_t d, int64_t r0, int64_t r1) {
  rmsNormBackwardRows(x, w, eps, dy, residual, dx, part, d, r0, r1);
}

} // namespace

template <class T>
void rmsNorm(CpuDevice &dev, View<const T> x, View<const T> weight, double eps,
             View<T> y) {
  int64_t d = x.shape.empty() ? 0 : x.shape.back();
  int64_t rows = d ? x.numel() / d : 0;
  dev.pool().parallelFor(
      rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, d)),
      [&](int64_t r0, int64_t r1) {
        rmsNormRowsOf(x.data, weight.data, eps, y.data, d, r0, r1);
      });
}

template <class T>
void rmsNormBackward(CpuDevice &dev, View<const T> x, View<const T> weight,
                     double eps, View<const T> dy, View<T> dx, View<T> dweight,
                     const T *residual) {
  int64_t d = x.shape.empty() ? 0 : x.shape.back();
  int64_t rows = d ? x.numel() / d : 0;
  int64_t parts = (rows + kRowsPerPart - 1) / kRowsPerPart;
  std::vector<T> partial(static_cast<size_t>(parts) * d, T(0));
  dev.pool().parallelFor(parts, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p)
      rmsNormBackwardRowsOf(x.data, weight.data, eps, dy.data, residual,
                            dx.data, partial.data() + p * d, d,
                            p * kRowsPerPart,
                            std::min(rows, (p + 1) * kRowsPerPart));
  });
  std::memset(dweight.data, 0, sizeof(T) * d);
  for (int64_t p = 0; p < parts; ++p)
    for (int64_t j = 0; j < d; ++j)
      dweight.data[j] += partial[p * d + j];
}

#define WHALE_INSTANTIATE(T)                                                   \
  template void rmsNorm<T>(CpuDevice &, View<const T>, View<const T>, double,  \
                           View<T>);                                           \
  template void rmsNormBackward<T>(CpuDevice &, View<const T>, View<const T>,  \
                                   double, View<const T>, View<T>, View<T>,    \
                                   const T *);
WHALE_INSTANTIATE(float)
WHALE_INSTANTIATE(double)
#undef WHALE_INSTANTIATE

} // namespace whale::rt::cpu
