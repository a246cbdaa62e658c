//===- Normalization.cpp - softmax, layernorm, embedding, cross entropy ---===//

#include "runtime/cpu/ExpMath.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/VectorClones.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace whale::rt::cpu {

namespace {
/// A tensor seen as [outer, axis, inner] around one axis.
struct AxisSplit {
  int64_t outer = 1, len = 1, inner = 1;
};
AxisSplit splitAt(const Shape &shape, int64_t axis) {
  AxisSplit s;
  for (int64_t i = 0; i < axis; ++i)
    s.outer *= shape[i];
  s.len = shape[axis];
  for (size_t i = axis + 1; i < shape.size(); ++i)
    s.inner *= shape[i];
  return s;
}
} // namespace

template <class T>
void softmax(CpuDevice &dev, View<const T> x, int64_t axis, View<T> y) {
  AxisSplit s = splitAt(x.shape, axis);
  dev.pool().parallelFor(
      s.outer * s.inner,
      std::max<int64_t>(1, 1024 / std::max<int64_t>(1, s.len)),
      [&](int64_t l0, int64_t l1) {
        for (int64_t line = l0; line < l1; ++line) {
          int64_t o = line / s.inner, i = line % s.inner;
          const T *in = x.data + o * s.len * s.inner + i;
          T *out = y.data + o * s.len * s.inner + i;
          T mx = in[0];
          for (int64_t j = 1; j < s.len; ++j)
            mx = std::max(mx, in[j * s.inner]);
          T sum = 0;
          for (int64_t j = 0; j < s.len; ++j) {
            // A row of -inf (fully masked) gives zeros, not NaN.
            T e = std::isinf(mx) && mx < 0 ? T(0)
                                           : std::exp(in[j * s.inner] - mx);
            out[j * s.inner] = e;
            sum += e;
          }
          T inv = sum > 0 ? T(1) / sum : T(0);
          for (int64_t j = 0; j < s.len; ++j)
            out[j * s.inner] *= inv;
        }
      });
}

template <class T>
void softmaxBackward(CpuDevice &dev, View<const T> y, View<const T> dy,
                     int64_t axis, View<T> dx) {
  // dx = y * (dy - sum(dy * y)) along the axis.
  AxisSplit s = splitAt(y.shape, axis);
  dev.pool().parallelFor(
      s.outer * s.inner,
      std::max<int64_t>(1, 1024 / std::max<int64_t>(1, s.len)),
      [&](int64_t l0, int64_t l1) {
        for (int64_t line = l0; line < l1; ++line) {
          int64_t base = (line / s.inner) * s.len * s.inner + line % s.inner;
          T dot = 0;
          for (int64_t j = 0; j < s.len; ++j)
            dot += dy.data[base + j * s.inner] * y.data[base + j * s.inner];
          for (int64_t j = 0; j < s.len; ++j) {
            int64_t at = base + j * s.inner;
            dx.data[at] = y.data[at] * (dy.data[at] - dot);
          }
        }
      });
}

namespace {
/// A row's mean and 1 / standard deviation, in the order the fused row
/// kernels keep too (lowering/Transforms/Fusion/FusedRowKernel.cpp): the mean,
/// then the variance about it.
template <class T>
void rowStatistics(const T *in, int64_t d, double eps, T &mu, T &rs) {
  mu = 0;
  for (int64_t j = 0; j < d; ++j)
    mu += in[j];
  mu /= T(d);
  T var = 0;
  for (int64_t j = 0; j < d; ++j)
    var += (in[j] - mu) * (in[j] - mu);
  var /= T(d);
  rs = T(1) / std::sqrt(var + T(eps));
}
} // namespace

template <class T>
void layerNorm(CpuDevice &dev, View<const T> x, View<const T> gamma,
               View<const T> beta, double eps, View<T> y, T *mean, T *rstd) {
  int64_t d = x.shape.back(), rows = d ? x.numel() / d : 0;
  dev.pool().parallelFor(
      rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, d)),
      [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const T *in = x.data + r * d;
          T *out = y.data + r * d;
          T mu, rs;
          rowStatistics(in, d, eps, mu, rs);
          for (int64_t j = 0; j < d; ++j)
            out[j] = (in[j] - mu) * rs * gamma.data[j] + beta.data[j];
          mean[r] = mu;
          rstd[r] = rs;
        }
      });
}

template <class T>
void layerNormStatistics(CpuDevice &dev, View<const T> x, double eps, T *mean,
                         T *rstd) {
  int64_t d = x.shape.back(), rows = d ? x.numel() / d : 0;
  dev.pool().parallelFor(
      rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, d)),
      [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r)
          rowStatistics(x.data + r * d, d, eps, mean[r], rstd[r]);
      });
}

namespace {

/// Rows [r0, r1) of layernorm's backward: dx, and each row's terms of
/// dgamma and dbeta added into pg and pb. A row's two sums are kept in
/// kLanes partial sums, each over every kLanes-th element, added together
/// in lane order at the end: a fixed order, so every plan and every
/// clone computes the same bits, and one the compiler may put in vectors.
template <class T>
WHALE_INLINE_LOOP void
layerNormBackwardRows(const T *__restrict x, const T *__restrict gamma,
                      const T *mean, const T *rstd, const T *__restrict dy,
                      T *__restrict dx, T *__restrict pg, T *__restrict pb,
                      int64_t d, int64_t r0, int64_t r1) {
  constexpr int64_t kLanes = 16;
  const int64_t whole = d - d % kLanes;
  for (int64_t r = r0; r < r1; ++r) {
    const T *in = x + r * d, *g = dy + r * d;
    T *out = dx + r * d;
    const T mu = mean[r], rs = rstd[r];
    // dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
    T laneD[kLanes] = {}, laneDX[kLanes] = {};
    for (int64_t j = 0; j < whole; j += kLanes)
      for (int64_t l = 0; l < kLanes; ++l) {
        T xhat = (in[j + l] - mu) * rs, dxhat = g[j + l] * gamma[j + l];
        laneD[l] += dxhat;
        laneDX[l] += dxhat * xhat;
        pg[j + l] += g[j + l] * xhat;
        pb[j + l] += g[j + l];
      }
    for (int64_t j = whole; j < d; ++j) {
      T xhat = (in[j] - mu) * rs, dxhat = g[j] * gamma[j];
      laneD[j - whole] += dxhat;
      laneDX[j - whole] += dxhat * xhat;
      pg[j] += g[j] * xhat;
      pb[j] += g[j];
    }
    T sumD = 0, sumDX = 0;
    for (int64_t l = 0; l < kLanes; ++l) {
      sumD += laneD[l];
      sumDX += laneDX[l];
    }
    const T meanD = sumD / T(d), meanDX = sumDX / T(d);
    for (int64_t j = 0; j < d; ++j) {
      T xhat = (in[j] - mu) * rs;
      out[j] = rs * (g[j] * gamma[j] - meanD - xhat * meanDX);
    }
  }
}

WHALE_VECTOR_CLONES void
layerNormBackwardRowsOf(const float *x, const float *gamma, const float *mean,
                        const float *rstd, const float *dy, float *dx,
                        float *pg, float *pb, int64_t d, int64_t r0,
                        int64_t r1) {
  layerNormBackwardRows(x, gamma, mean, rstd, dy, dx, pg, pb, d, r0, r1);
}

void layerNormBackwardRowsOf(const double *x, const double *gamma,
                             const double *mean, const double *rstd,
                             const double *dy, double *dx, double *pg,
                             double *pb, int64_t d, int64_t r0, int64_t r1) {
  layerNormBackwardRows(x, gamma, mean, rstd, dy, dx, pg, pb, d, r0, r1);
}

} // namespace

template <class T>
void layerNormBackward(CpuDevice &dev, View<const T> x, View<const T> gamma,
                       const T *mean, const T *rstd, View<const T> dy,
                       View<T> dx, View<T> dgamma, View<T> dbeta) {
  int64_t d = x.shape.back(), rows = d ? x.numel() / d : 0;
  int threads = dev.pool().size();
  // dgamma and dbeta sum over rows: each thread keeps its own partial sums.
  std::vector<T> partial(2 * static_cast<size_t>(threads) * d, T(0));
  dev.pool().parallelFor(threads, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      int64_t r0 = rows * t / threads, r1 = rows * (t + 1) / threads;
      T *pg = partial.data() + 2 * t * d, *pb = pg + d;
      layerNormBackwardRowsOf(x.data, gamma.data, mean, rstd, dy.data, dx.data,
                              pg, pb, d, r0, r1);
    }
  });
  std::memset(dgamma.data, 0, sizeof(T) * d);
  std::memset(dbeta.data, 0, sizeof(T) * d);
  for (int t = 0; t < threads; ++t)
    for (int64_t j = 0; j < d; ++j) {
      dgamma.data[j] += partial[2 * t * d + j];
      dbeta.data[j] += partial[2 * t * d + d + j];
    }
}

template <class T, class I>
Status embedding(CpuDevice &dev, View<const T> table, View<const I> ids,
                 View<T> out) {
  int64_t vocab = table.shape[0], d = table.shape[1], n = ids.numel();
  for (int64_t i = 0; i < n; ++i)
    if (ids.data[i] < 0 || ids.data[i] >= vocab)
      return Status::invalid("embedding id " + std::to_string(ids.data[i]) +
                             " at position " + std::to_string(i) +
                             " is outside the table's " +
                             std::to_string(vocab) + " rows");
  dev.pool().parallelFor(
      n, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, d)),
      [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i)
          std::memcpy(out.data + i * d, table.data + ids.data[i] * d,
                      sizeof(T) * d);
      });
  return Status::ok();
}

template <class T, class I>
void embeddingBackward(CpuDevice &dev, View<const I> ids, View<const T> dout,
                       View<T> dtable) {
  int64_t d = dtable.shape[1], n = ids.numel();
  std::memset(dtable.data, 0, sizeof(T) * dtable.numel());
  // Rows repeat among the ids, so threads split the columns instead.
  dev.pool().parallelFor(d, 16, [&](int64_t c0, int64_t c1) {
    for (int64_t i = 0; i < n; ++i) {
      T *dst = dtable.data + ids.data[i] * d;
      const T *src = dout.data + i * d;
      for (int64_t c = c0; c < c1; ++c)
        dst[c] += src[c];
    }
  });
}

namespace {

/// A row's log-sum-exp: its maximum, then the sum of exp(x - max) in
/// kLanes partial sums added in lane order (a fixed order that vectors
/// keep), then max + log(sum).
template <class T>
WHALE_INLINE_LOOP T logSumExpRow(const T *__restrict row, int64_t c) {
  constexpr int64_t kLanes = 16;
  const int64_t whole = c - c % kLanes;
  T mx = row[0];
  for (int64_t j = 1; j < c; ++j)
    mx = row[j] > mx ? row[j] : mx;
  T lanes[kLanes] = {};
  for (int64_t j = 0; j < whole; j += kLanes)
    for (int64_t l = 0; l < kLanes; ++l)
      lanes[l] += vectorExp(row[j + l] - mx);
  for (int64_t j = whole; j < c; ++j)
    lanes[j - whole] += vectorExp(row[j] - mx);
  T sum = 0;
  for (int64_t l = 0; l < kLanes; ++l)
    sum += lanes[l];
  return mx + std::log(sum);
}

WHALE_VECTOR_CLONES float logSumExpRowOf(const float *row, int64_t c) {
  return logSumExpRow(row, c);
}
double logSumExpRowOf(const double *row, int64_t c) {
  return logSumExpRow(row, c);
}

/// d = exp(row - lse) * g, the softmax's row times the loss's gradient.
template <class T>
WHALE_INLINE_LOOP void softmaxTimesRow(const T *__restrict row, T lse, T g,
                                       T *__restrict d, int64_t c) {
  for (int64_t j = 0; j < c; ++j)
    d[j] = vectorExp(row[j] - lse) * g;
}

WHALE_VECTOR_CLONES void softmaxTimesRowOf(const float *row, float lse, float g,
                                           float *d, int64_t c) {
  softmaxTimesRow(row, lse, g, d, c);
}
void softmaxTimesRowOf(const double *row, double lse, double g, double *d,
                       int64_t c) {
  softmaxTimesRow(row, lse, g, d, c);
}

} // namespace

template <class T, class I>
Status crossEntropy(CpuDevice &dev, View<const T> logits, View<const I> labels,
                    View<T> loss, T *lse) {
  int64_t c = logits.shape.back(), n = labels.numel();
  for (int64_t i = 0; i < n; ++i)
    if (labels.data[i] < 0 || labels.data[i] >= c)
      return Status::invalid("label " + std::to_string(labels.data[i]) +
                             " at position " + std::to_string(i) +
                             " is outside the " + std::to_string(c) +
                             " classes");
  dev.pool().parallelFor(n,
                         std::max<int64_t>(1, 4096 / std::max<int64_t>(1, c)),
                         [&](int64_t i0, int64_t i1) {
                           for (int64_t i = i0; i < i1; ++i) {
                             const T *row = logits.data + i * c;
                             lse[i] = logSumExpRowOf(row, c);
                             loss.data[i] = lse[i] - row[labels.data[i]];
                           }
                         });
  return Status::ok();
}

template <class T, class I>
void crossEntropyBackward(CpuDevice &dev, View<const T> logits,
                          View<const I> labels, const T *lse,
                          View<const T> dloss, View<T> dlogits) {
  // d/dlogits = (softmax(logits) - onehot(label)) * dloss
  int64_t c = logits.shape.back(), n = labels.numel();
  dev.pool().parallelFor(n,
                         std::max<int64_t>(1, 4096 / std::max<int64_t>(1, c)),
                         [&](int64_t i0, int64_t i1) {
                           for (int64_t i = i0; i < i1; ++i) {
                             T g = dloss.data[i];
                             softmaxTimesRowOf(logits.data + i * c, lse[i], g,
                                               dlogits.data + i * c, c);
                             dlogits.data[i * c + labels.data[i]] -= g;
                           }
                         });
}

#define WHALE_INSTANTIATE_IDS(T, I)                                            \
  template Status embedding<T, I>(CpuDevice &, View<const T>, View<const I>,   \
                                  View<T>);                                    \
  template void embeddingBackward<T, I>(CpuDevice &, View<const I>,            \
                                        View<const T>, View<T>);               \
  template Status crossEntropy<T, I>(CpuDevice &, View<const T>,               \
                                     View<const I>, View<T>, T *);             \
  template void crossEntropyBackward<T, I>(CpuDevice &, View<const T>,         \
                                           View<const I>, const T *,           \
                                           View<const T>, View<T>);
#define WHALE_INSTANTIATE(T)                                                   \
  template void softmax<T>(CpuDevice &, View<const T>, int64_t, View<T>);      \
  template void softmaxBackward<T>(CpuDevice &, View<const T>, View<const T>,  \
                                   int64_t, View<T>);                          \
  template void layerNorm<T>(CpuDevice &, View<const T>, View<const T>,        \
                             View<const T>, double, View<T>, T *, T *);        \
  template void layerNormStatistics<T>(CpuDevice &, View<const T>, double,     \
                                       T *, T *);                              \
  template void layerNormBackward<T>(                                          \
      CpuDevice &, View<const T>, View<const T>, const T *, const T *,         \
      View<const T>, View<T>, View<T>, View<T>);                               \
  WHALE_INSTANTIATE_IDS(T, int32_t)                                            \
  WHALE_INSTANTIATE_IDS(T, int64_t)
WHALE_INSTANTIATE(float)
WHALE_INSTANTIATE(double)
#undef WHALE_INSTANTIATE
#undef WHALE_INSTANTIATE_IDS

} // namespace whale::rt::cpu
