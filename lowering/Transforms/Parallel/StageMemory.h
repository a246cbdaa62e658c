//===- StageMemory.h - a stage's peak memory, as the planner counts it -*- C++
//-*-===//
//
// One memory model for the passes that place work under memory limits
// (-whale-taskgraph-partition's auto_parallel cut and -whale-balance's
// shares): what one device of a pipeline stage holds at its peak. It is an
// estimate from the cost interface, meant to err high; docs/balancing.md
// compares it with the allocator's measured peaks.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_TRANSFORMS_PARALLEL_STAGEMEMORY_H
#define WHALE_LOWERING_TRANSFORMS_PARALLEL_STAGEMEMORY_H

#include "dialects/Whale/IR/TrainAttrs.h"

#include <algorithm>
#include <cstdint>

namespace whale::plan {

/// Micro-batches whose activations stage `stage` of `stages` holds at once:
/// all of them under GPipe, p - s under 1F1B (at most m). With `chunks`
/// model chunks a stage (the interleaved schedule), 1F1B holds the
/// forwards it runs ahead, 2 (p - 1 - s) + (v - 1) p, and one more, each
/// a v-th of the stage's activations: counted in whole micro-batches of
/// the stage, rounded up.
inline int64_t inFlightOf(int64_t stage, int64_t stages, int64_t m, bool gpipe,
                          int64_t chunks = 1) {
  if (stages == 1)
    return 1;
  if (gpipe)
    return m;
  if (chunks <= 1)
    return std::min<int64_t>(stages - stage, m);
  const int64_t held = std::min<int64_t>(
      m * chunks, 2 * (stages - 1 - stage) + (chunks - 1) * stages + 1);
  return (held + chunks - 1) / chunks;
}

/// -whale-data-parallel-sync's gradient bucket where the config sets no
/// bucket_bytes (its pass option's default, Passes.td).
inline constexpr double kDefaultBucketBytes = 26214400;

/// The gradient bucket's bytes under `settings`: the config's, else the
/// pass's default.
inline double gradientBucketBytes(SettingsAttr settings) {
  return settings.getBucketBytes() > 0 ? double(settings.getBucketBytes())
                                       : kDefaultBucketBytes;
}

/// Whether each bucket is reduced to its owners as soon as it is final,
/// leaving a device only its own part (unreducedShare): ZeRO with the sums
/// overlapped, and no running sum of whole gradients to keep (one
/// micro-batch of `m`, or shard_gradients).
inline bool reducedInBackward(SettingsAttr settings, int64_t m) {
  return settings.shardsOptimizerState() && settings.overlapGradSync() &&
         (m == 1 || settings.getShardGradients());
}

/// The share of one micro-batch's gradients of `paramBytes` of parameters
/// that a device holds at once: all of them, or where each bucket is
/// reduced to its owners as soon as it is final (`reducedInBackward`:
/// ZeRO over `peers` > 1 with the sums overlapped, and no running sum of
/// whole gradients kept, one micro-batch or shard_gradients) its own part
/// and the bucket being filled (`bucket`: the bucket size, or a larger
/// parameter, which is a bucket alone): the rest is freed once packed.
inline double unreducedShare(double paramBytes, double peers, double bucket,
                             bool reducedInBackward) {
  if (!reducedInBackward || peers <= 1 || paramBytes <= 0)
    return 1;
  return std::min(1.0, 1 / peers + bucket / paramBytes);
}

/// Bytes of the gradients of `paramBytes` of parameters: one each (of
/// which a device holds the share `unreduced` at once), and when gradients
/// accumulate over `m` micro-batches the running sums, of which a device
/// keeps the fraction `sums` (below 1 where each micro-batch's are reduced
/// to their owners, shard_gradients).
inline double gradientBytesOf(double paramBytes, int64_t m, double sums = 1,
                              double unreduced = 1) {
  return paramBytes * (m > 1 ? unreduced + sums : unreduced);
}

/// Bytes of a stage's parameters and what they carry: their gradients and
/// the optimizer's `states` tensors each (a fraction of them where the
/// state is sharded over replicas). `held`: the fraction of the parameters
/// themselves a device keeps (below 1 where they are sharded over the
/// replicas, shard_parameters; the layers it gathers count with the
/// activations). `sums`: the fraction of the gradients' running sums it
/// keeps while micro-batches accumulate (below 1 where each micro-batch's
/// are reduced to their owners, shard_gradients). `unreduced`: the share
/// of a micro-batch's gradients held at once (unreducedShare).
inline double fixedBytesOf(double paramBytes, double states, int64_t m,
                           double held = 1, double sums = 1,
                           double unreduced = 1) {
  return paramBytes * (held + states) +
         gradientBytesOf(paramBytes, m, sums, unreduced);
}

/// Bytes per row of a micro-batch: the activations of the micro-batches in
/// flight (the stage's outputs and what it receives from earlier stages)
/// and about one more for the gradients backward makes of them; and the
/// model's inputs, which the driver hands every rank for all m
/// micro-batches of its local batch.
inline double rowBytesOf(double actPerRow, int64_t inFlight,
                         double inputsPerRow, int64_t m) {
  return double(inFlight + 1) * actPerRow + inputsPerRow * double(m);
}

/// Bytes per row under activation recomputation: of each micro-batch in
/// flight, only what the stage received and its checkpoints (`keptPerRow`),
/// and about that again for their gradients; one segment's activations as
/// its backward runs them again, about as much for their gradients and as
/// much again for the gradients' temporaries (measured peaks come within
/// 2x segment of the rest: docs/simulation.md); and the model's inputs as
/// above.
inline double rowBytesRecomputing(double keptPerRow, double segmentPerRow,
                                  int64_t inFlight, double inputsPerRow,
                                  int64_t m) {
  return double(inFlight + 1) * keptPerRow + 3 * segmentPerRow +
         inputsPerRow * double(m);
}

} // namespace whale::plan

#endif // WHALE_LOWERING_TRANSFORMS_PARALLEL_STAGEMEMORY_H
