//===- AttentionMath.h - attention a row per GPU thread ----------*- C++
//-*-===//
//
// Attention on the GPU without the [..., T, T] scores: each thread takes one
// query row (or, for dk and dv, one key row) of one head and walks the rows
// of the other side once, keeping only running statistics. The forward is
// the online softmax (a running maximum rescales the running sum and the
// output row as it goes); the backward recomputes each probability from its
// row's log-sum-exp, which a first pass finds with D_i = dout_i . out_i:
//   dS_ij = P_ij (dout_i . v_j - D_i)
//   dq_i = scale sum_j dS_ij k_j, dk_j = scale sum_i dS_ij q_i,
//   dv_j = sum_i P_ij dout_i.
// Threads write only their own rows, so nothing is added atomically. Plain
// C++ for both compilers, as ElementMath.h: the CPU tests run these
// functions against the CPU device's attention.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CUDA_ATTENTIONMATH_H
#define WHALE_RUNTIME_CUDA_ATTENTIONMATH_H

#include "runtime/cuda/ElementMath.h"

namespace whale::rt::cuda {

/// q and the output are [heads, t, e]; k and v [heads, tk, e].
struct AttentionDims {
  int64_t heads = 0, t = 0, tk = 0, e = 0;
  float scale = 1;
  bool causal = false;
};

/// The keys query row i sees: all, or up to its own position.
WHALE_HD int64_t visibleKeys(const AttentionDims &d, int64_t i) {
  return d.causal ? i + 1 : d.tk;
}

WHALE_HD float rowDot(const float *a, const float *b, int64_t n) {
  float s = 0;
  for (int64_t x = 0; x < n; ++x)
    s += a[x] * b[x];
  return s;
}

/// Output row `row` (head-major: h * t + i) and its log-sum-exp.
WHALE_HD void attentionForwardRow(const AttentionDims &d, const float *q,
                                  const float *k, const float *v, float *out,
                                  int64_t row) {
  const int64_t h = row / d.t, i = row % d.t;
  const float *qi = q + row * d.e;
  const float *kh = k + h * d.tk * d.e, *vh = v + h * d.tk * d.e;
  float *oi = out + row * d.e;
  for (int64_t x = 0; x < d.e; ++x)
    oi[x] = 0;
  float mx = -INFINITY, sum = 0;
  const int64_t keys = visibleKeys(d, i);
  for (int64_t j = 0; j < keys; ++j) {
    const float s = rowDot(qi, kh + j * d.e, d.e) * d.scale;
    const float next = fmaxf(mx, s);
    const float rescale = expf(mx - next); // 0 on the first key
    const float p = expf(s - next);
    sum = sum * rescale + p;
    const float *vj = vh + j * d.e;
    for (int64_t x = 0; x < d.e; ++x)
      oi[x] = oi[x] * rescale + p * vj[x];
    mx = next;
  }
  const float inv = sum > 0 ? 1.0f / sum : 0.0f;
  for (int64_t x = 0; x < d.e; ++x)
    oi[x] *= inv;
}

/// Query row `row`'s log-sum-exp of its scaled scores, and D = dout . out.
WHALE_HD void attentionRowStats(const AttentionDims &d, const float *q,
                                const float *k, const float *out,
                                const float *dout, float *lse, float *delta,
                                int64_t row) {
  const int64_t h = row / d.t, i = row % d.t;
  const float *qi = q + row * d.e, *kh = k + h * d.tk * d.e;
  float mx = -INFINITY, sum = 0;
  const int64_t keys = visibleKeys(d, i);
  for (int64_t j = 0; j < keys; ++j) {
    const float s = rowDot(qi, kh + j * d.e, d.e) * d.scale;
    const float next = fmaxf(mx, s);
    sum = sum * expf(mx - next) + expf(s - next);
    mx = next;
  }
  lse[row] = keys > 0 ? mx + logf(sum) : -INFINITY;
  delta[row] = rowDot(dout + row * d.e, out + row * d.e, d.e);
}

/// dq for query row `row`.
WHALE_HD void attentionQueryGradRow(const AttentionDims &d, const float *q,
                                    const float *k, const float *v,
                                    const float *dout, const float *lse,
                                    const float *delta, float *dq,
                                    int64_t row) {
  const int64_t h = row / d.t, i = row % d.t;
  const float *qi = q + row * d.e, *doi = dout + row * d.e;
  const float *kh = k + h * d.tk * d.e, *vh = v + h * d.tk * d.e;
  float *dqi = dq + row * d.e;
  for (int64_t x = 0; x < d.e; ++x)
    dqi[x] = 0;
  const int64_t keys = visibleKeys(d, i);
  for (int64_t j = 0; j < keys; ++j) {
    const float *kj = kh + j * d.e;
    const float p = expf(rowDot(qi, kj, d.e) * d.scale - lse[row]);
    const float ds = p * (rowDot(doi, vh + j * d.e, d.e) - delta[row]);
    for (int64_t x = 0; x < d.e; ++x)
      dqi[x] += ds * d.scale * kj[x];
  }
}

/// dk and dv for key row `row` (h * tk + j), over the queries that see it.
WHALE_HD void attentionKeyGradRow(const AttentionDims &d, const float *q,
                                  const float *k, const float *v,
                                  const float *dout, const float *lse,
                                  const float *delta, float *dk, float *dv,
                                  int64_t row) {
  const int64_t h = row / d.tk, j = row % d.tk;
  const float *kj = k + row * d.e, *vj = v + row * d.e;
  float *dkj = dk + row * d.e, *dvj = dv + row * d.e;
  for (int64_t x = 0; x < d.e; ++x)
    dkj[x] = dvj[x] = 0;
  for (int64_t i = d.causal ? j : 0; i < d.t; ++i) {
    const int64_t qrow = h * d.t + i;
    const float *qi = q + qrow * d.e, *doi = dout + qrow * d.e;
    const float p = expf(rowDot(qi, kj, d.e) * d.scale - lse[qrow]);
    const float ds = p * (rowDot(doi, vj, d.e) - delta[qrow]);
    for (int64_t x = 0; x < d.e; ++x) {
      dkj[x] += ds * d.scale * qi[x];
      dvj[x] += p * doi[x];
    }
  }
}

} // namespace whale::rt::cuda

#endif
