//===- Parts.h - where each rank's part of a split extent lies --*- C++ -*-===//
//
// A shard group splits an extent in `shards` parts, equal or (uneven
// shards, for devices of different speeds) proportional to whole-number
// weights: the extent is cut in W = sum(weights) equal units and rank i
// takes weights[i] consecutive units. Counting in units keeps a split that
// passes through a reshape (hidden -> heads x head size) the same split on
// both sides, and keeps every part a whole number of elements. The
// runtime, the checkpoint and the verifiers all place parts by this one
// rule.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CORE_PARTS_H
#define WHALE_RUNTIME_CORE_PARTS_H

#include <cstdint>

namespace whale::rt {

struct PartRange {
  int64_t offset = 0, size = 0;
};

/// The units an extent is cut into: the weights' sum, or `shards` equal
/// parts when there are no weights.
inline int64_t partUnits(int64_t shards, const int64_t *weights) {
  if (!weights)
    return shards;
  int64_t units = 0;
  for (int64_t i = 0; i < shards; ++i)
    units += weights[i];
  return units;
}

/// Part `index` of `extent`; false when the weights are not positive or
/// the extent is no whole number of units.
inline bool partOf(int64_t extent, int64_t shards, const int64_t *weights,
                   int64_t index, PartRange &out) {
  if (shards < 1 || index < 0 || index >= shards || extent < 0)
    return false;
  // Summed with a bound, so weights from outside cannot overflow: the
  // units never exceed a non-empty extent they divide.
  int64_t units = weights ? 0 : shards;
  if (weights)
    for (int64_t i = 0; i < shards; ++i) {
      if (weights[i] < 1 || weights[i] > extent - units)
        return false;
      units += weights[i];
    }
  if (units < 1 || extent % units != 0)
    return false;
  const int64_t unit = extent / units;
  int64_t before = 0;
  for (int64_t i = 0; i < index; ++i)
    before += weights ? weights[i] : 1;
  out.offset = before * unit;
  out.size = (weights ? weights[index] : 1) * unit;
  return true;
}

} // namespace whale::rt

#endif // WHALE_RUNTIME_PARTS_H
