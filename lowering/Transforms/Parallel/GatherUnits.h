//===- GatherUnits.h - the layers ZeRO stage 3 gathers together --*- C++
//-*-===//
//
// Under shard_parameters a layer's parameters are gathered together: the
// pass that places the gathers (-whale-shard-parameters) and the balancer,
// which counts the gathered layers a device holds, read the unit here.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_TRANSFORMS_PARALLEL_GATHERUNITS_H
#define WHALE_LOWERING_TRANSFORMS_PARALLEL_GATHERUNITS_H

#include "llvm/ADT/StringRef.h"

namespace whale::plan {

/// The layer that made parameter `name` (its call path): the model's own
/// call, the first two parts (`gpt/block_3` of `gpt/block_3/attn/q/w`), or
/// the name where the model made the parameter itself.
inline llvm::StringRef gatherUnitOf(llvm::StringRef name) {
  size_t first = name.find('/');
  if (first == llvm::StringRef::npos)
    return name;
  size_t second = name.find('/', first + 1);
  return second == llvm::StringRef::npos ? name : name.take_front(second);
}

/// Gathered layers a device holds at once: the one computing and the next,
/// whose gather was started a layer ahead (its tensors are made at its
/// wait, when the one before may still be read).
inline constexpr double kGatheredUnitsHeld = 2;

} // namespace whale::plan

#endif
