//===- KvAttention.h - a decoding step's attention over a cache -*- C++ -*-===//
//
// Query rows at positions first .. first + N - 1 attend to a key/value
// cache's rows 0 .. their own position (causal); the cache [B, Hk, W, E]
// already holds the new rows. One (batch, head) pair's rows at a time, so a
// device splits the pairs over its threads; each query head h reads key
// head h / (H / Hk), as whale.attention's grouped keys are laid out.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_OPS_KVATTENTION_H
#define WHALE_RUNTIME_OPS_KVATTENTION_H

#include "runtime/core/Status.h"
#include "runtime/core/Tensor.h"

#include <cstdint>
#include <string>

namespace whale::rt {

/// The sizes of a decoding step's attention, read from its operands.
struct KvAttentionShape {
  int64_t batch = 0, heads = 0, keyHeads = 0, rows = 0, width = 0, capacity = 0;
  /// The (batch, query head) pairs: the unit of work.
  int64_t pairs() const { return batch * heads; }
};

/// ok when q [B, H, N, E] and the caches [B, Hk, W, E] fit one another and
/// first + N <= W, else invalid, saying what does not.
Status kvAttentionShape(const Shape &q, const Shape &cache, int64_t first,
                        KvAttentionShape &d);

/// out's rows of pairs [begin, end) (pair = b * H + h), all in host memory.
void kvAttentionPairs(const KvAttentionShape &d, const float *q,
                      const float *keys, const float *values, int64_t first,
                      double scale, float *out, int64_t begin, int64_t end);

} // namespace whale::rt

#endif
