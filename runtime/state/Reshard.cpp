//===- Reshard.cpp - the delta between two state collections --------------===//
//
// For each tensor and each rank of the new plan that holds a box of it:
// the distinct boxes old ranks hold that overlap it cut the box into cells
// (every cut of an old box is a cut of the grid, so each cell lies wholly
// inside each old box that touches it). Each cell goes to the cheapest
// holder: one on the same device (it stays), else one on the same node,
// else any; among equals the one that has sent least so far, then the
// lowest rank. Cells from one holder are merged back into larger pieces
// where they are neighbours. A cell some old rank on the destination's
// device holds never moves, and any other must: so the bytes the plan
// moves are the lower bound.
//
//===----------------------------------------------------------------------===//

#include "runtime/state/Reshard.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

namespace whale {

int64_t Box::elements() const {
  int64_t n = 1;
  for (int64_t s : size)
    n *= s;
  return n;
}

std::string Box::str() const {
  std::string out = "[";
  for (size_t d = 0; d < offset.size(); ++d)
    out += (d ? ", " : "") + std::to_string(offset[d]) + ":" +
           std::to_string(offset[d] + size[d]);
  return out + "]";
}

std::optional<Box> intersect(const Box &a, const Box &b) {
  if (a.offset.size() != b.offset.size())
    return std::nullopt;
  Box out;
  for (size_t d = 0; d < a.offset.size(); ++d) {
    int64_t lo = std::max(a.offset[d], b.offset[d]);
    int64_t hi = std::min(a.offset[d] + a.size[d], b.offset[d] + b.size[d]);
    if (hi <= lo)
      return std::nullopt;
    out.offset.push_back(lo);
    out.size.push_back(hi - lo);
  }
  return out;
}

Box wholeBox(const std::vector<int64_t> &shape) {
  return Box{std::vector<int64_t>(shape.size(), 0), shape};
}

int64_t StateCollection::tensorBytes() const {
  int64_t n = 0;
  for (const StateTensor &t : tensors)
    n += wholeBox(t.shape).elements() * t.elementBytes;
  return n;
}

int64_t StateCollection::heldBytes() const {
  int64_t n = 0;
  for (const StateTensor &t : tensors)
    for (const auto &[rank, box] : t.holders)
      n += box.elements() * t.elementBytes;
  return n;
}

const StateTensor *StateCollection::find(const std::string &name) const {
  for (const StateTensor &t : tensors)
    if (t.name == name)
      return &t;
  return nullptr;
}

const char *routeName(Route r) {
  switch (r) {
  case Route::Stays:
    return "stays";
  case Route::SameNode:
    return "same node";
  case Route::AcrossNodes:
    return "across nodes";
  }
  return "across nodes";
}

namespace {

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// The cells of `box` that the boxes in `cuts` cut it into.
std::vector<Box> cellsOf(const Box &box, const std::vector<Box> &cuts) {
  const size_t dims = box.offset.size();
  std::vector<std::vector<int64_t>> points(dims);
  for (size_t d = 0; d < dims; ++d) {
    std::set<int64_t> p = {box.offset[d], box.offset[d] + box.size[d]};
    for (const Box &c : cuts)
      for (int64_t x : {c.offset[d], c.offset[d] + c.size[d]})
        if (x > box.offset[d] && x < box.offset[d] + box.size[d])
          p.insert(x);
    points[d].assign(p.begin(), p.end());
  }
  std::vector<Box> cells;
  std::vector<size_t> at(dims, 0);
  while (true) {
    Box cell;
    for (size_t d = 0; d < dims; ++d) {
      cell.offset.push_back(points[d][at[d]]);
      cell.size.push_back(points[d][at[d] + 1] - points[d][at[d]]);
    }
    cells.push_back(cell);
    size_t d = dims;
    while (d > 0 && ++at[d - 1] + 1 >= points[d - 1].size())
      at[--d] = 0;
    if (d == 0)
      break;
  }
  return cells;
}

/// `a` and `b` side by side along one dimension and alike in the others:
/// their union, a box.
std::optional<Box> joined(const Box &a, const Box &b) {
  std::optional<Box> out;
  for (size_t d = 0; d < a.offset.size(); ++d) {
    bool same = a.offset[d] == b.offset[d] && a.size[d] == b.size[d];
    if (same)
      continue;
    if (out || a.offset[d] + a.size[d] != b.offset[d])
      return std::nullopt;
    out = a;
    out->size[d] += b.size[d];
  }
  return out;
}

Route routeOf(const RankPlace &from, const RankPlace &to) {
  return from.device == to.device ? Route::Stays
         : from.node == to.node   ? Route::SameNode
                                  : Route::AcrossNodes;
}

/// Merges the boxes into as few as joining neighbours gives (in place).
void mergeNeighbours(std::vector<Box> &boxes) {
  bool changed = true;
  while (changed) {
    changed = false;
    std::sort(boxes.begin(), boxes.end());
    for (size_t i = 0; i < boxes.size() && !changed; ++i)
      for (size_t j = 0; j < boxes.size() && !changed; ++j)
        if (i != j)
          if (std::optional<Box> u = joined(boxes[i], boxes[j])) {
            boxes[i] = *u;
            boxes.erase(boxes.begin() + j);
            changed = true;
          }
  }
}

} // namespace

bool planReshard(const StateCollection &from, const StateCollection &to,
                 ReshardPlan &out, std::string &error) {
  out = ReshardPlan();
  out.sentBytes.assign(from.ranks.size(), 0);
  out.receivedBytes.assign(to.ranks.size(), 0);
  for (size_t t = 0; t < to.tensors.size(); ++t) {
    const StateTensor &want = to.tensors[t];
    const StateTensor *have = from.find(want.name);
    if (!have) {
      error = "the new plan's state tensor '" + want.name +
              "' is not in the old plan's state";
      return false;
    }
    if (have->shape != want.shape || have->elementBytes != want.elementBytes) {
      error = "state tensor '" + want.name + "' is " + shapeText(have->shape) +
              " in the old plan and " + shapeText(want.shape) + " in the new";
      return false;
    }
    // The old holders by the box they hold.
    std::map<Box, std::vector<int64_t>> byBox;
    for (const auto &[rank, box] : have->holders)
      byBox[box].push_back(rank);
    for (const auto &[dest, need] : want.holders) {
      std::vector<Box> overlapping;
      for (const auto &[box, ranks] : byBox)
        if (intersect(box, need))
          overlapping.push_back(box);
      const RankPlace &place = to.ranks[dest];
      // The cells each old holding (rank, box) serves, to merge into pieces.
      std::map<std::pair<int64_t, Box>, std::vector<Box>> served;
      for (const Box &cell : cellsOf(need, overlapping)) {
        int64_t best = -1;
        const Box *bestBox = nullptr;
        Route bestRoute = Route::AcrossNodes;
        for (const Box &box : overlapping) {
          if (!intersect(box, cell))
            continue;
          for (int64_t r : byBox[box]) {
            Route route = routeOf(from.ranks[r], place);
            if (best < 0 || route < bestRoute ||
                (route == bestRoute &&
                 out.sentBytes[r] < out.sentBytes[best])) {
              best = r;
              bestBox = &box;
              bestRoute = route;
            }
          }
        }
        if (best < 0) {
          error = "no rank of the old plan holds " + cell.str() + " of '" +
                  want.name + "', which rank " + std::to_string(dest) +
                  " of the new plan needs";
          return false;
        }
        int64_t bytes = cell.elements() * want.elementBytes;
        if (bestRoute != Route::Stays) {
          out.lowerBoundBytes += bytes;
          out.sentBytes[best] += bytes;
          out.receivedBytes[dest] += bytes;
        }
        served[{best, *bestBox}].push_back(cell);
      }
      for (auto &[source, cells] : served) {
        mergeNeighbours(cells);
        Route route = routeOf(from.ranks[source.first], place);
        for (const Box &box : cells) {
          ReshardPiece p{t,           box,  source.second,
                         need,        source.first, dest,
                         route,       box.elements() * want.elementBytes};
          (route == Route::Stays       ? out.stayBytes
           : route == Route::SameNode ? out.sameNodeBytes
                                       : out.acrossNodeBytes) += p.bytes;
          out.pieces.push_back(std::move(p));
        }
      }
    }
  }
  return true;
}

void copyBox(const uint8_t *src, const Box &srcBox, uint8_t *dst,
             const Box &dstBox, const Box &piece, int64_t elementBytes) {
  const size_t dims = piece.offset.size();
  if (piece.elements() == 0)
    return;
  // Row-major strides of both boxes, in elements.
  std::vector<int64_t> srcStride(dims, 1), dstStride(dims, 1);
  for (size_t d = dims; d-- > 1;) {
    srcStride[d - 1] = srcStride[d] * srcBox.size[d];
    dstStride[d - 1] = dstStride[d] * dstBox.size[d];
  }
  // Runs along the last dimension are contiguous in both.
  const int64_t run = (dims ? piece.size[dims - 1] : 1) * elementBytes;
  std::vector<int64_t> at(piece.offset);
  while (true) {
    int64_t s = 0, t = 0;
    for (size_t d = 0; d < dims; ++d) {
      s += (at[d] - srcBox.offset[d]) * srcStride[d];
      t += (at[d] - dstBox.offset[d]) * dstStride[d];
    }
    std::memcpy(dst + t * elementBytes, src + s * elementBytes, run);
    // The next run: every dimension but the last, odometer-wise.
    size_t d = dims ? dims - 1 : 0;
    while (d > 0 && ++at[d - 1] >= piece.offset[d - 1] + piece.size[d - 1]) {
      at[d - 1] = piece.offset[d - 1];
      --d;
    }
    if (d == 0)
      break;
  }
}

bool applyReshard(const StateCollection &to, const ReshardPlan &plan,
                  const HeldState &old, HeldState &out, std::string &error) {
  out.clear();
  for (const StateTensor &t : to.tensors)
    for (const auto &[rank, box] : t.holders)
      out[{rank, t.name}][box].assign(box.elements() * t.elementBytes, 0);
  for (const ReshardPiece &p : plan.pieces) {
    const StateTensor &t = to.tensors[p.tensor];
    auto holding = old.find({p.from, t.name});
    const std::vector<uint8_t> *src = nullptr;
    if (holding != old.end())
      if (auto it = holding->second.find(p.held); it != holding->second.end())
        src = &it->second;
    if (!src || int64_t(src->size()) != p.held.elements() * t.elementBytes) {
      error = "old rank " + std::to_string(p.from) + " has no " +
              p.held.str() + " of '" + t.name + "' of " +
              std::to_string(p.held.elements() * t.elementBytes) + " bytes";
      return false;
    }
    copyBox(src->data(), p.held, out[{p.to, t.name}][p.needed].data(),
            p.needed, p.box, t.elementBytes);
  }
  return true;
}

} // namespace whale
