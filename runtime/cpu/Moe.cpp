//===- Moe.cpp - a mixture of experts' routing on the CPU -----------------===//
//
// Each worker takes whole groups: it finds a group's slots
// (runtime/ops/MoeMath.h) and moves the group's rows. A slot belongs to one
// group, so no two workers write the same row.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/CpuDevice.h"

#include <algorithm>
#include <string>
#include <vector>

namespace whale::rt {
namespace {

/// An error naming the first choice outside [0, E), or ok.
Status checkChoices(const MoeShape &m, const int32_t *experts) {
  for (int64_t i = 0, n = m.choiceCount(); i < n; ++i)
    if (experts[i] < 0 || experts[i] >= m.experts)
      return Status::invalid("expert " + std::to_string(experts[i]) +
                             " chosen at [" + std::to_string(i / m.choices) +
                             ", " + std::to_string(i % m.choices) +
                             "] of the flattened choices is outside [0, " +
                             std::to_string(m.experts) + ")");
  return Status::ok();
}

/// Runs `body(g, slots)` for every group g, its slots found, spread over
/// the pool.
template <class Body>
void forEachGroup(ThreadPool &pool, const MoeShape &m, const int32_t *experts,
                  Body body) {
  pool.parallelFor(m.groups, 1, [&](int64_t g0, int64_t g1) {
    std::vector<int32_t> slots(static_cast<size_t>(m.tokens * m.choices));
    std::vector<int32_t> counts(static_cast<size_t>(m.experts));
    for (int64_t g = g0; g < g1; ++g) {
      moeGroupSlots(m, experts + g * m.tokens * m.choices, slots.data(),
                    counts.data());
      body(g, slots.data());
    }
  });
}

} // namespace

Status CpuDevice::moeDispatch(const MoeShape &m, const float *tokens,
                              const int32_t *experts, const float *gates,
                              float *slotted) {
  if (Status st = checkChoices(m, experts); !st)
    return st;
  const int64_t d = m.width, gc = m.groups * m.capacity;
  // Every expert's rows of a group are that group's to fill, empty ones
  // with zeros.
  forEachGroup(pool(), m, experts, [&](int64_t g, const int32_t *slots) {
    for (int64_t e = 0; e < m.experts; ++e)
      std::fill_n(slotted + (e * gc + g * m.capacity) * d, m.capacity * d,
                  0.0f);
    const int64_t base = g * m.tokens * m.choices;
    for (int64_t i = 0; i < m.tokens * m.choices; ++i) {
      if (slots[i] < 0)
        continue;
      const float w = gates ? gates[base + i] : 1.0f;
      const float *x = tokens + (g * m.tokens + i / m.choices) * d;
      float *out = slotted + m.row(g, slots[i]) * d;
      for (int64_t c = 0; c < d; ++c)
        out[c] = w * x[c];
    }
  });
  return Status::ok();
}

Status CpuDevice::moeCombine(const MoeShape &m, const float *slotted,
                             const int32_t *experts, const float *gates,
                             float *tokens) {
  if (Status st = checkChoices(m, experts); !st)
    return st;
  const int64_t d = m.width;
  forEachGroup(pool(), m, experts, [&](int64_t g, const int32_t *slots) {
    const int64_t base = g * m.tokens * m.choices;
    for (int64_t s = 0; s < m.tokens; ++s) {
      float *out = tokens + (g * m.tokens + s) * d;
      std::fill_n(out, d, 0.0f);
      for (int64_t j = 0; j < m.choices; ++j) {
        const int64_t i = s * m.choices + j;
        if (slots[i] < 0)
          continue;
        const float w = gates ? gates[base + i] : 1.0f;
        const float *y = slotted + m.row(g, slots[i]) * d;
        for (int64_t c = 0; c < d; ++c)
          out[c] += w * y[c];
      }
    }
  });
  return Status::ok();
}

Status CpuDevice::moeGateGrad(const MoeShape &m, const float *tokens,
                              const float *slotted, const int32_t *experts,
                              float *dgates) {
  if (Status st = checkChoices(m, experts); !st)
    return st;
  const int64_t d = m.width;
  forEachGroup(pool(), m, experts, [&](int64_t g, const int32_t *slots) {
    const int64_t base = g * m.tokens * m.choices;
    for (int64_t i = 0; i < m.tokens * m.choices; ++i) {
      float dot = 0.0f;
      if (slots[i] >= 0) {
        const float *x = tokens + (g * m.tokens + i / m.choices) * d;
        const float *y = slotted + m.row(g, slots[i]) * d;
        for (int64_t c = 0; c < d; ++c)
          dot += x[c] * y[c];
      }
      dgates[base + i] = dot;
    }
  });
  return Status::ok();
}

Status CpuDevice::oneHot(const int32_t *ids, int64_t count, int64_t classes,
                         float *out) {
  for (int64_t i = 0; i < count; ++i)
    if (ids[i] < 0 || ids[i] >= classes)
      return Status::invalid("one_hot id " + std::to_string(ids[i]) +
                             " at " + std::to_string(i) + " is outside [0, " +
                             std::to_string(classes) + ")");
  std::fill_n(out, count * classes, 0.0f);
  for (int64_t i = 0; i < count; ++i)
    out[i * classes + ids[i]] = 1.0f;
  return Status::ok();
}

} // namespace whale::rt
