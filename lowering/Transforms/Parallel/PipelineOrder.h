//===- PipelineOrder.h - the order of a pipeline stage's steps ---*- C++
//-*-===//
//
// What -whale-pipeline writes on each stage, apart from the pass so that
// tests of the replay can build programs in the planner's own order:
//
//   gpipe        every forward, then every backward: a stage holds the
//                activations of all m micro-batches at once;
//   1f1b         stage s runs p - 1 - s forwards ahead, then alternates one
//                forward and one backward, then drains (PipeDream-flush,
//                DAPPLE): it holds at most p - s micro-batches;
//   interleaved  with v model chunks a stage (Megatron-LM's schedule), the
//                k-th forward of a stage is micro-batch g p + (k mod p) of
//                chunk (k / p) mod v, in groups g of p v steps; backwards
//                likewise from the last chunk down. Under 1f1b stage s runs
//                2 (p - 1 - s) + (v - 1) p forwards ahead, then alternates;
//                under gpipe all forwards come first. On equal stages the
//                bubble is (p - 1) / (v m + p - 1), v times smaller, for v
//                times the messages. Needs m a multiple of p.
//
// With one stage, micro-batches are gradient accumulation (F0 B0 F1 B1 ...).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_TRANSFORMS_PARALLEL_PIPELINEORDER_H
#define WHALE_LOWERING_TRANSFORMS_PARALLEL_PIPELINEORDER_H

#include "dialects/Whale/IR/ScheduleStep.h"

#include <algorithm>
#include <string_view>
#include <vector>

namespace whale::plan {

/// Stage `s`'s steps among `p` stages, `m` micro-batches and `v` chunks a
/// stage, under `kind` ("gpipe" or "1f1b").
inline std::vector<ScheduleStep> pipelineOrder(std::string_view kind, int64_t s,
                                               int64_t p, int64_t m,
                                               int64_t v = 1) {
  std::vector<ScheduleStep> order;
  const bool gpipe = kind == "gpipe" && p > 1;
  if (v <= 1 || p <= 1) {
    const int64_t warm = gpipe ? m : std::min(p - 1 - s, m);
    for (int64_t j = 0; j < warm; ++j)
      order.push_back(ScheduleStep::forward(j));
    for (int64_t j = warm; j < m; ++j) {
      order.push_back(ScheduleStep::forward(j));
      order.push_back(ScheduleStep::backwardOf(j - warm));
    }
    for (int64_t j = m - warm; j < m; ++j)
      order.push_back(ScheduleStep::backwardOf(j));
    return order;
  }
  auto step = [&](int64_t k, bool backward) {
    int64_t group = k / (p * v), at = k % (p * v), chunk = at / p;
    return ScheduleStep{backward, group * p + at % p,
                        backward ? v - 1 - chunk : chunk};
  };
  const int64_t total = m * v;
  const int64_t warm =
      gpipe ? total : std::min(total, 2 * (p - 1 - s) + (v - 1) * p);
  for (int64_t k = 0; k < warm; ++k)
    order.push_back(step(k, false));
  for (int64_t k = 0; k < total - warm; ++k) {
    order.push_back(step(warm + k, false));
    order.push_back(step(k, true));
  }
  for (int64_t k = total - warm; k < total; ++k)
    order.push_back(step(k, true));
  return order;
}

} // namespace whale::plan

#endif // WHALE_LOWERING_TRANSFORMS_PARALLEL_PIPELINEORDER_H
