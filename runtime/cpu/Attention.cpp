//===- Attention.cpp - fused attention on the CPU -------------------------===//
//
// Attention one query row at a time: the row's scores against every key it
// may see, their softmax and the weighted sum of values, in a buffer of one
// row. The [..., T, T] matrix is never made, forward or backward. Heads run
// in parallel, each on one thread, so the backward pass's sums into dk and
// dv need no locks.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/CpuDevice.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace whale::rt {
namespace {

struct Dims {
  int64_t heads = 1, t = 0, tk = 0, e = 0;
};

Status dimsOf(const char *op, View<const float> q, View<const float> k,
              View<const float> v, bool causal, Dims &d) {
  if (q.rank() < 2 || k.shape != v.shape || q.rank() != k.rank() ||
      q.shape.back() != k.shape.back())
    return Status::invalid(std::string(op) + ": q " + shapeString(q.shape) +
                           ", k " + shapeString(k.shape) + " and v " +
                           shapeString(v.shape) +
                           " are not [..., T, E] alike");
  d.t = q.shape[q.rank() - 2];
  d.tk = k.shape[k.rank() - 2];
  d.e = q.shape.back();
  d.heads = d.t > 0 && d.e > 0 ? q.numel() / (d.t * d.e) : 0;
  if (causal && d.t != d.tk)
    return Status::invalid(std::string(op) +
                           ": a causal mask needs as many keys as queries");
  return Status::ok();
}

/// Row i's probabilities over the keys it sees (`keys` of them) into p,
/// from its scores: p[j] = softmax(scale * q_i . k_j).
void rowProbabilities(const float *qi, const float *kh, int64_t keys,
                      int64_t e, float scale, float *p) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < keys; ++j) {
    const float *kj = kh + j * e;
    float s = 0;
    for (int64_t c = 0; c < e; ++c)
      s += qi[c] * kj[c];
    p[j] = s * scale;
    mx = std::max(mx, p[j]);
  }
  float sum = 0;
  for (int64_t j = 0; j < keys; ++j) {
    p[j] = std::exp(p[j] - mx);
    sum += p[j];
  }
  float inv = 1.0f / sum;
  for (int64_t j = 0; j < keys; ++j)
    p[j] *= inv;
}

} // namespace

Status CpuDevice::attention(View<const float> q, View<const float> k,
                            View<const float> v, double scale, bool causal,
                            View<float> out) {
  Dims d;
  if (Status st = dimsOf("attention", q, k, v, causal, d); !st)
    return st;
  const float s = static_cast<float>(scale);
  pool().parallelFor(d.heads, 1, [&](int64_t h0, int64_t h1) {
    std::vector<float> p(static_cast<size_t>(d.tk));
    for (int64_t h = h0; h < h1; ++h) {
      const float *qh = q.data + h * d.t * d.e, *kh = k.data + h * d.tk * d.e,
                  *vh = v.data + h * d.tk * d.e;
      float *oh = out.data + h * d.t * d.e;
      for (int64_t i = 0; i < d.t; ++i) {
        int64_t keys = causal ? i + 1 : d.tk;
        rowProbabilities(qh + i * d.e, kh, keys, d.e, s, p.data());
        float *oi = oh + i * d.e;
        std::fill(oi, oi + d.e, 0.0f);
        for (int64_t j = 0; j < keys; ++j) {
          const float *vj = vh + j * d.e;
          for (int64_t c = 0; c < d.e; ++c)
            oi[c] += p[j] * vj[c];
        }
      }
    }
  });
  return Status::ok();
}

Status CpuDevice::attentionBackward(View<const float> q, View<const float> k,
                                    View<const float> v, View<const float> out,
                                    View<const float> dout, double scale,
                                    bool causal, View<float> dq,
                                    View<float> dk, View<float> dv) {
  Dims d;
  if (Status st = dimsOf("attention_grad", q, k, v, causal, d); !st)
    return st;
  const float s = static_cast<float>(scale);
  pool().parallelFor(d.heads, 1, [&](int64_t h0, int64_t h1) {
    std::vector<float> p(static_cast<size_t>(d.tk));
    for (int64_t h = h0; h < h1; ++h) {
      const int64_t qo = h * d.t * d.e, ko = h * d.tk * d.e;
      const float *qh = q.data + qo, *kh = k.data + ko, *vh = v.data + ko,
                  *oh = out.data + qo, *doh = dout.data + qo;
      float *dqh = dq.data + qo, *dkh = dk.data + ko, *dvh = dv.data + ko;
      std::fill(dkh, dkh + d.tk * d.e, 0.0f);
      std::fill(dvh, dvh + d.tk * d.e, 0.0f);
      for (int64_t i = 0; i < d.t; ++i) {
        int64_t keys = causal ? i + 1 : d.tk;
        const float *qi = qh + i * d.e, *doi = doh + i * d.e;
        rowProbabilities(qi, kh, keys, d.e, s, p.data());
        // D_i = dout_i . out_i = sum_j p_ij dP_ij.
        float di = 0;
        for (int64_t c = 0; c < d.e; ++c)
          di += doi[c] * oh[i * d.e + c];
        float *dqi = dqh + i * d.e;
        std::fill(dqi, dqi + d.e, 0.0f);
        for (int64_t j = 0; j < keys; ++j) {
          const float *kj = kh + j * d.e, *vj = vh + j * d.e;
          float *dkj = dkh + j * d.e, *dvj = dvh + j * d.e;
          // dv_j += p_ij dout_i; dP_ij = dout_i . v_j.
          float dp = 0;
          for (int64_t c = 0; c < d.e; ++c) {
            dvj[c] += p[j] * doi[c];
            dp += doi[c] * vj[c];
          }
          // dS_ij = p_ij (dP_ij - D_i), times the scale into dq and dk.
          float ds = p[j] * (dp - di) * s;
          for (int64_t c = 0; c < d.e; ++c) {
            dqi[c] += ds * kj[c];
            dkj[c] += ds * qi[c];
          }
        }
      }
    }
  });
  return Status::ok();
}

} // namespace whale::rt
