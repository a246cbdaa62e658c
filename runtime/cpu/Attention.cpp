//===- Attention.cpp - fused attention on the CPU -------------------------===//
//
// Attention a block of query rows at a time: the block's scores against the
// keys it may see (one GEMM into a buffer of kBlock rows), their softmax,
// and the weighted sum of values (a second GEMM). The [..., T, T] matrix is
// never made, forward or backward: a thread holds kBlock x T scores at most.
// Heads run in parallel, each on one thread, so the backward pass's sums
// into dk and dv need no locks.
//
//===----------------------------------------------------------------------===//

#include "runtime/AttentionShape.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/cpu/Kernels.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace whale::rt {
namespace {

/// Query rows a block: its scores (kBlock x keys) stay in the caches.
constexpr int64_t kBlock = 64;

using Dims = AttentionShape;

/// The probabilities of query rows [i0, i0 + rows) over keys [0, keys)
/// into p (rows x keys): scores by GEMM, masked past each row's own
/// position when causal, softmax by row.
void blockProbabilities(const float *qh, const float *kh, int64_t i0,
                        int64_t rows, int64_t keys, int64_t e, float scale,
                        bool causal, float *p) {
  cpu::blasGemm(false, true, rows, keys, e, scale, qh + i0 * e, e, kh, e, 0.0f,
                p, keys);
  for (int64_t r = 0; r < rows; ++r) {
    float *row = p + r * keys;
    const int64_t visible = causal ? i0 + r + 1 : keys;
    float mx = -INFINITY;
    for (int64_t j = 0; j < visible; ++j)
      mx = std::max(mx, row[j]);
    float sum = 0;
    for (int64_t j = 0; j < visible; ++j) {
      row[j] = std::exp(row[j] - mx);
      sum += row[j];
    }
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < visible; ++j)
      row[j] *= inv;
    std::fill(row + visible, row + keys, 0.0f);
  }
}

} // namespace

Status CpuDevice::attention(View<const float> q, View<const float> k,
                            View<const float> v, double scale, bool causal,
                            View<float> out) {
  Dims d;
  if (Status st = attentionShape("attention", q, k, v, causal, d); !st)
    return st;
  const float s = static_cast<float>(scale);
  pool().parallelFor(d.heads, 1, [&](int64_t h0, int64_t h1) {
    std::vector<float> p(static_cast<size_t>(kBlock * d.tk));
    for (int64_t h = h0; h < h1; ++h) {
      const float *qh = q.data + h * d.t * d.e, *kh = k.data + h * d.tk * d.e,
                  *vh = v.data + h * d.tk * d.e;
      float *oh = out.data + h * d.t * d.e;
      for (int64_t i0 = 0; i0 < d.t; i0 += kBlock) {
        const int64_t rows = std::min(kBlock, d.t - i0);
        const int64_t keys = causal ? i0 + rows : d.tk;
        blockProbabilities(qh, kh, i0, rows, keys, d.e, s, causal, p.data());
        cpu::blasGemm(false, false, rows, d.e, keys, 1.0f, p.data(), keys, vh,
                      d.e, 0.0f, oh + i0 * d.e, d.e);
      }
    }
  });
  return Status::ok();
}

Status CpuDevice::attentionBackward(View<const float> q, View<const float> k,
                                    View<const float> v, View<const float> out,
                                    View<const float> dout, double scale,
                                    bool causal, View<float> dq, View<float> dk,
                                    View<float> dv) {
  Dims d;
  if (Status st = attentionShape("attention_grad", q, k, v, causal, d); !st)
    return st;
  const float s = static_cast<float>(scale);
  pool().parallelFor(d.heads, 1, [&](int64_t h0, int64_t h1) {
    std::vector<float> p(static_cast<size_t>(kBlock * d.tk)), dp(p.size()),
        rowDot(static_cast<size_t>(kBlock));
    for (int64_t h = h0; h < h1; ++h) {
      const int64_t qo = h * d.t * d.e, ko = h * d.tk * d.e;
      const float *qh = q.data + qo, *kh = k.data + ko, *vh = v.data + ko,
                  *oh = out.data + qo, *doh = dout.data + qo;
      float *dqh = dq.data + qo, *dkh = dk.data + ko, *dvh = dv.data + ko;
      std::fill(dkh, dkh + d.tk * d.e, 0.0f);
      std::fill(dvh, dvh + d.tk * d.e, 0.0f);
      for (int64_t i0 = 0; i0 < d.t; i0 += kBlock) {
        const int64_t rows = std::min(kBlock, d.t - i0);
        const int64_t keys = causal ? i0 + rows : d.tk;
        blockProbabilities(qh, kh, i0, rows, keys, d.e, s, causal, p.data());
        const float *dob = doh + i0 * d.e;
        // D_i = dout_i . out_i = sum_j p_ij dP_ij.
        for (int64_t r = 0; r < rows; ++r) {
          float di = 0;
          for (int64_t c = 0; c < d.e; ++c)
            di += dob[r * d.e + c] * oh[(i0 + r) * d.e + c];
          rowDot[r] = di;
        }
        // dv += P^T dout; dP = dout v^T.
        cpu::blasGemm(true, false, keys, d.e, rows, 1.0f, p.data(), keys, dob,
                      d.e, 1.0f, dvh, d.e);
        cpu::blasGemm(false, true, rows, keys, d.e, 1.0f, dob, d.e, vh, d.e,
                      0.0f, dp.data(), keys);
        // dS = P (dP - D) scale, zero where P is (masked).
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < keys; ++j) {
            const int64_t at = r * keys + j;
            dp[at] = p[at] * (dp[at] - rowDot[r]) * s;
          }
        // dq = dS k; dk += dS^T q.
        cpu::blasGemm(false, false, rows, d.e, keys, 1.0f, dp.data(), keys, kh,
                      d.e, 0.0f, dqh + i0 * d.e, d.e);
        cpu::blasGemm(true, false, keys, d.e, rows, 1.0f, dp.data(), keys,
                      qh + i0 * d.e, d.e, 1.0f, dkh, d.e);
      }
    }
  });
  return Status::ok();
}

} // namespace whale::rt
