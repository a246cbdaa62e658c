//===- KvAttention.cpp - a decoding step's attention over a cache ---------===//
//
// The scores of one query row are at most W wide (the cache's positions),
// so they are held whole: the largest, the exponentials and their sum in
// f32, as the fused attention kernels compute them (runtime/cpu/
// Attention.cpp), and the output as the weighted sum of the value rows
// over that sum. A device without a kernel of its own (Device's default)
// copies the operands to the host and back.
//
//===----------------------------------------------------------------------===//

#include "runtime/ops/KvAttention.h"

#include "runtime/core/Device.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace whale::rt {

Status kvAttentionShape(const Shape &q, const Shape &cache, int64_t first,
                        KvAttentionShape &d) {
  if (q.size() != 4 || cache.size() != 4)
    return Status::invalid("kv_attention: needs q [B, H, N, E] and caches "
                           "[B, Hk, W, E], got " +
                           shapeString(q) + " and " + shapeString(cache));
  d = {q[0], q[1], cache[1], q[2], q[3], cache[2]};
  if (cache[0] != d.batch || cache[3] != d.width || d.keyHeads <= 0 ||
      d.heads % d.keyHeads != 0)
    return Status::invalid("kv_attention: q " + shapeString(q) + " and cache " +
                           shapeString(cache) +
                           " differ in B or E, or the cache's heads do not "
                           "divide q's");
  if (first < 0 || first + d.rows > d.capacity)
    return Status::invalid("kv_attention: position " + std::to_string(first) +
                           " and " + std::to_string(d.rows) +
                           " new rows pass the cache's " +
                           std::to_string(d.capacity) + " positions");
  return Status::ok();
}

void kvAttentionPairs(const KvAttentionShape &d, const float *q,
                      const float *keys, const float *values, int64_t first,
                      double scale, float *out, int64_t begin, int64_t end) {
  const int64_t e = d.width, group = d.heads / d.keyHeads;
  std::vector<float> scores(static_cast<size_t>(first + d.rows));
  std::vector<float> acc(static_cast<size_t>(e));
  for (int64_t pair = begin; pair < end; ++pair) {
    const int64_t b = pair / d.heads, h = pair % d.heads;
    const int64_t kh = b * d.keyHeads + h / group;
    const float *k = keys + kh * d.capacity * e;
    const float *v = values + kh * d.capacity * e;
    for (int64_t i = 0; i < d.rows; ++i) {
      const float *qi = q + (pair * d.rows + i) * e;
      const int64_t seen = first + i + 1;
      float top = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < seen; ++j) {
        float dot = 0;
        for (int64_t c = 0; c < e; ++c)
          dot += qi[c] * k[j * e + c];
        scores[j] = dot * static_cast<float>(scale);
        top = std::max(top, scores[j]);
      }
      float sum = 0;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = 0; j < seen; ++j) {
        const float w = std::exp(scores[j] - top);
        sum += w;
        for (int64_t c = 0; c < e; ++c)
          acc[c] += w * v[j * e + c];
      }
      float *o = out + (pair * d.rows + i) * e;
      for (int64_t c = 0; c < e; ++c)
        o[c] = acc[c] / sum;
    }
  }
}

Status Device::kvAttention(View<const float> q, View<const float> keys,
                           View<const float> values, int64_t first,
                           double scale, View<float> out) {
  KvAttentionShape d;
  if (Status st = kvAttentionShape(q.shape, keys.shape, first, d); !st)
    return st;
  if (hostAddressable()) {
    kvAttentionPairs(d, q.data, keys.data, values.data, first, scale, out.data,
                     0, d.pairs());
    return Status::ok();
  }
  std::vector<float> hq(q.numel()), hk(keys.numel()), hv(values.numel()),
      ho(out.numel());
  for (auto [host, view] : {std::pair{&hq, &q}, {&hk, &keys}, {&hv, &values}})
    if (Status st = copyToHost(host->data(), view->data,
                               view->numel() * int64_t(sizeof(float)));
        !st)
      return st;
  kvAttentionPairs(d, hq.data(), hk.data(), hv.data(), first, scale, ho.data(),
                   0, d.pairs());
  return copyFromHost(out.data, ho.data(),
                      out.numel() * int64_t(sizeof(float)));
}

} // namespace whale::rt
