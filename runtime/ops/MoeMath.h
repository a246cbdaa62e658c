//===- MoeMath.h - a mixture of experts' slots ------------------*- C++ -*-===//
//
// One routing for every device and every plan: within a group of S tokens
// each expert has C slots, taken first by every token's first choice in
// token order, then by second choices, and so on; a choice that finds its
// expert full is dropped (GShard's rule). Groups are independent, so a plan
// that cuts the batch over devices keeps and drops the same choices as one
// device. Slot (e, c) of group g is row e * G * C + g * C + c of the
// slotted tensor [E, G * C, D].
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_OPS_MOEMATH_H
#define WHALE_RUNTIME_OPS_MOEMATH_H

#include <cstdint>

#ifdef __CUDACC__
#define WHALE_MOE_HD __host__ __device__ inline
#else
#define WHALE_MOE_HD inline
#endif

namespace whale::rt {

/// A mixture of experts' routing extents.
struct MoeShape {
  int64_t groups = 0;   ///< G
  int64_t tokens = 0;   ///< S, per group
  int64_t choices = 0;  ///< k, per token
  int64_t experts = 0;  ///< E
  int64_t capacity = 0; ///< C, slots per expert and group
  int64_t width = 0;    ///< D

  WHALE_MOE_HD int64_t choiceCount() const { return groups * tokens * choices; }
  /// The slotted tensor's row of slot `slot` (e * C + c) of group `g`.
  WHALE_MOE_HD int64_t row(int64_t g, int32_t slot) const {
    return (slot / capacity) * groups * capacity + g * capacity +
           slot % capacity;
  }
};

/// Group g's slots: slots[s * k + j] = e * C + c for token s's choice j, or
/// -1 when dropped; `counts` is E scratch entries. Returns the index (in the
/// group's [S, k]) of the first choice outside [0, E), or -1.
WHALE_MOE_HD int64_t moeGroupSlots(const MoeShape &m, const int32_t *experts,
                                   int32_t *slots, int32_t *counts) {
  for (int64_t e = 0; e < m.experts; ++e)
    counts[e] = 0;
  for (int64_t j = 0; j < m.choices; ++j)
    for (int64_t s = 0; s < m.tokens; ++s) {
      const int64_t i = s * m.choices + j;
      const int32_t e = experts[i];
      if (e < 0 || e >= m.experts)
        return i;
      slots[i] = counts[e] < m.capacity
                     ? static_cast<int32_t>(e * m.capacity + counts[e]++)
                     : -1;
    }
  return -1;
}

} // namespace whale::rt

#endif
