//===- Attention.cpp - fused attention on the CPU -------------------------===//
//
// Attention a block of query rows at a time: the block's scores against the
// keys it may see (one GEMM into a buffer of kBlock rows), their softmax,
// and the weighted sum of values (a second GEMM). The [..., T, T] matrix is
// never made, forward or backward: a thread holds kBlock x T scores at most.
// Heads run in parallel, each on one thread, so the backward pass's sums
// into dk and dv need no locks. Under amp every product's operands are
// rounded to bf16 (q, k, v, dout, and the probabilities and their gradient
// before they enter a product), as the GPU's bf16 GEMMs take them; the
// softmax and dS stay fp32. Sequence-major operands ([..., T, H, E]) are
// read in place: a head's rows are H E apart, the GEMMs' leading
// dimension, so no permute runs before or after. Keys and values shared by
// a group of query heads (grouped-query attention) are read where they
// are: a query head reads its group's key head, and the backward pass runs
// each key head's group on one thread, so its sums need no locks either.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/CpuDevice.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/ops/AttentionShape.h"
#include "runtime/ops/Bf16.h"

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
/// position when causal, softmax by row. q's rows are `ldq` apart, k's
/// `ldk`.
void blockProbabilities(const float *qh, const float *kh, int64_t i0,
                        int64_t rows, int64_t keys, int64_t e, int64_t ldq,
                        int64_t ldk, float scale, bool causal, float *p) {
  cpu::blasGemm(false, true, rows, keys, e, scale, qh + i0 * ldq, ldq, kh, ldk,
                0.0f, p, keys);
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

/// x[0, n) rounded to bf16 in place.
void roundAll(float *x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    x[i] = roundToBf16(x[i]);
}

} // namespace

Status CpuDevice::attention(View<const float> q, View<const float> k,
                            View<const float> v, double scale,
                            AttentionForm form, View<float> out) {
  Dims d;
  if (Status st = attentionShape("attention", q, k, v, form, d); !st)
    return st;
  const bool causal = form.causal;
  const int64_t ld = d.rowStride(), ldk = d.keyRowStride();
  const float s = static_cast<float>(scale);
  const bool bf16 = matmulPrecision() == MatmulPrecision::BF16;
  std::vector<float> q16, k16, v16;
  const float *qm = matmulInput(q, q16).data, *km = matmulInput(k, k16).data,
              *vm = matmulInput(v, v16).data;
  pool().parallelFor(d.heads, 1, [&](int64_t h0, int64_t h1) {
    std::vector<float> p(static_cast<size_t>(kBlock * d.tk));
    for (int64_t h = h0; h < h1; ++h) {
      const int64_t qo = d.headOffset(h, d.t),
                    ko = d.keyHeadOffset(d.keyHeadOf(h));
      const float *qh = qm + qo, *kh = km + ko, *vh = vm + ko;
      float *oh = out.data + qo;
      for (int64_t i0 = 0; i0 < d.t; i0 += kBlock) {
        const int64_t rows = std::min(kBlock, d.t - i0);
        const int64_t keys = causal ? i0 + rows : d.tk;
        blockProbabilities(qh, kh, i0, rows, keys, d.e, ld, ldk, s, causal,
                           p.data());
        if (bf16)
          roundAll(p.data(), rows * keys);
        cpu::blasGemm(false, false, rows, d.e, keys, 1.0f, p.data(), keys, vh,
                      ldk, 0.0f, oh + i0 * ld, ld);
      }
    }
  });
  return Status::ok();
}

Status CpuDevice::attentionBackward(View<const float> q, View<const float> k,
                                    View<const float> v, View<const float> out,
                                    View<const float> dout, double scale,
                                    AttentionForm form, View<float> dq,
                                    View<float> dk, View<float> dv) {
  Dims d;
  if (Status st = attentionShape("attention_grad", q, k, v, form, d); !st)
    return st;
  const bool causal = form.causal;
  const int64_t ld = d.rowStride(), ldk = d.keyRowStride();
  const float s = static_cast<float>(scale);
  const bool bf16 = matmulPrecision() == MatmulPrecision::BF16;
  std::vector<float> q16, k16, v16, dout16;
  const float *qm = matmulInput(q, q16).data, *km = matmulInput(k, k16).data,
              *vm = matmulInput(v, v16).data,
              *dom = matmulInput(dout, dout16).data;
  // A key head and the query heads of its group on one thread: dk and dv
  // sum over the group in the group's order, whatever the threads.
  pool().parallelFor(d.keyHeads(), 1, [&](int64_t g0, int64_t g1) {
    std::vector<float> p(static_cast<size_t>(kBlock * d.tk)), dp(p.size()),
        p16(bf16 ? p.size() : 0), rowDot(static_cast<size_t>(kBlock));
    for (int64_t g = g0; g < g1; ++g) {
      const int64_t ko = d.keyHeadOffset(g);
      const float *kh = km + ko, *vh = vm + ko;
      float *dkh = dk.data + ko, *dvh = dv.data + ko;
      for (int64_t j = 0; j < d.tk; ++j) {
        std::fill(dkh + j * ldk, dkh + j * ldk + d.e, 0.0f);
        std::fill(dvh + j * ldk, dvh + j * ldk + d.e, 0.0f);
      }
      for (int64_t h = g * d.kvGroup; h < (g + 1) * d.kvGroup; ++h) {
        const int64_t qo = d.headOffset(h, d.t);
        const float *qh = qm + qo, *oh = out.data + qo, *doh = dout.data + qo,
                    *domh = dom + qo;
        float *dqh = dq.data + qo;
        for (int64_t i0 = 0; i0 < d.t; i0 += kBlock) {
          const int64_t rows = std::min(kBlock, d.t - i0);
          const int64_t keys = causal ? i0 + rows : d.tk;
          blockProbabilities(qh, kh, i0, rows, keys, d.e, ld, ldk, s, causal,
                             p.data());
          const float *dob = doh + i0 * ld, *domb = domh + i0 * ld;
          // D_i = dout_i . out_i = sum_j p_ij dP_ij.
          for (int64_t r = 0; r < rows; ++r) {
            float di = 0;
            for (int64_t c = 0; c < d.e; ++c)
              di += dob[r * ld + c] * oh[(i0 + r) * ld + c];
            rowDot[r] = di;
          }
          // dv += P^T dout; dP = dout v^T.
          const float *pm = p.data();
          if (bf16) {
            std::copy(p.begin(), p.begin() + rows * keys, p16.begin());
            roundAll(p16.data(), rows * keys);
            pm = p16.data();
          }
          cpu::blasGemm(true, false, keys, d.e, rows, 1.0f, pm, keys, domb, ld,
                        1.0f, dvh, ldk);
          cpu::blasGemm(false, true, rows, keys, d.e, 1.0f, domb, ld, vh, ldk,
                        0.0f, dp.data(), keys);
          // dS = P (dP - D) scale, zero where P is (masked).
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < keys; ++j) {
              const int64_t at = r * keys + j;
              dp[at] = p[at] * (dp[at] - rowDot[r]) * s;
            }
          if (bf16)
            roundAll(dp.data(), rows * keys);
          // dq = dS k; dk += dS^T q.
          cpu::blasGemm(false, false, rows, d.e, keys, 1.0f, dp.data(), keys,
                        kh, ldk, 0.0f, dqh + i0 * ld, ld);
          cpu::blasGemm(true, false, keys, d.e, rows, 1.0f, dp.data(), keys,
                        qh + i0 * ld, ld, 1.0f, dkh, ldk);
        }
      }
    }
  });
  return Status::ok();
}

} // namespace whale::rt
