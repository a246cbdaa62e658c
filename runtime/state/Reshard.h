//===- Reshard.h - a job's state as tensors in boxes, and the delta ----*- C++
//-*-===//
//
// Tenplex's view of a training job's state (Wagenländer et al., SOSP'24):
// a collection of tensors, each a global shape and, per rank of a plan, the
// box of it that rank holds (data-parallel replicas hold the same box, a
// shard group's members their parts). Changing the plan is then the delta
// between two collections: each box a new rank needs is cut into pieces of
// boxes old ranks hold, each piece from the cheapest holder (the same
// device, then the same node, then elsewhere), nothing fetched twice and
// nothing moved that is already where it is needed.
//
// Plain C++, no MLIR: lib/elastic/StateCollection.h derives a collection from a
// plan; the reshard of a checkpoint or of a running job executes the plan.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_STATE_RESHARD_H
#define WHALE_RUNTIME_STATE_RESHARD_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace whale {

/// A block of a tensor: per dimension its first index and its extent. A
/// scalar's box has no dimensions and one element.
struct Box {
  std::vector<int64_t> offset, size;

  int64_t elements() const;
  bool operator==(const Box &o) const {
    return offset == o.offset && size == o.size;
  }
  bool operator<(const Box &o) const {
    return offset != o.offset ? offset < o.offset : size < o.size;
  }
  /// "[0:4, 8:16]": each dimension's half-open range.
  std::string str() const;
};

/// The part of both boxes, if they overlap.
std::optional<Box> intersect(const Box &a, const Box &b);
/// The whole of a tensor of `shape`.
Box wholeBox(const std::vector<int64_t> &shape);

/// Where a rank runs: its device, named so that the same device has the
/// same name in two plans ("node/kind:index"), and its node.
struct RankPlace {
  std::string device, node;
};

struct StateTensor {
  std::string name;
  std::vector<int64_t> shape;
  int64_t elementBytes = 4;
  /// Per holding rank, the box it holds.
  std::vector<std::pair<int64_t, Box>> holders;
};

struct StateCollection {
  std::string model;
  std::vector<RankPlace> ranks;
  std::vector<StateTensor> tensors;
  /// Bytes of one copy of every tensor, and of all that the ranks hold.
  int64_t tensorBytes() const;
  int64_t heldBytes() const;
  const StateTensor *find(const std::string &name) const;
};

enum class Route { Stays, SameNode, AcrossNodes };
const char *routeName(Route r);

/// One piece of a new rank's box, from one old rank: it lies within one
/// box the old rank holds (`held`) and one the new rank needs (`needed`).
struct ReshardPiece {
  size_t tensor = 0; ///< in the new collection
  Box box, held, needed;
  int64_t from = -1, to = -1; ///< the old rank, the new rank
  Route route = Route::Stays;
  int64_t bytes = 0;
};

struct ReshardPlan {
  std::vector<ReshardPiece> pieces;
  int64_t stayBytes = 0, sameNodeBytes = 0, acrossNodeBytes = 0;
  /// Bytes that must reach a device that holds none of them in the old
  /// plan, whatever the schedule: what the plan moves.
  int64_t lowerBoundBytes = 0;
  std::vector<int64_t> sentBytes;     ///< per old rank (moved, not stayed)
  std::vector<int64_t> receivedBytes; ///< per new rank
  int64_t movedBytes() const { return sameNodeBytes + acrossNodeBytes; }
};

/// The delta from `from` to `to`. False, with `error`, when a tensor of
/// the new plan is missing from the old or has another shape, or part of
/// a new rank's box is held by no old rank.
bool planReshard(const StateCollection &from, const StateCollection &to,
                 ReshardPlan &out, std::string &error);

/// What ranks hold: per (rank, tensor name), each box's bytes (row-major
/// within the box).
using HeldState =
    std::map<std::pair<int64_t, std::string>, std::map<Box, std::vector<uint8_t>>>;

/// Carries out `plan` on data: every box the new plan's ranks hold, built
/// from the pieces of `old` (the old plan's ranks' boxes). False, with
/// `error`, when `old` lacks a box a piece reads or has it at another size.
bool applyReshard(const StateCollection &to, const ReshardPlan &plan,
                  const HeldState &old, HeldState &out, std::string &error);

/// Copies `piece` (a box inside both) from `src`, holding `srcBox`, into
/// `dst`, holding `dstBox`; elements of `elementBytes`.
void copyBox(const uint8_t *src, const Box &srcBox, uint8_t *dst,
             const Box &dstBox, const Box &piece, int64_t elementBytes);

} // namespace whale

#endif
