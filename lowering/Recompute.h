//===- Recompute.h - activation recomputation's segments ----------*- C++
//-*-===//
//
// With `recompute = true` a stage keeps, of each micro-batch's forward,
// only the values that cross from one segment of its ops to a later one
// (checkpoints), and runs each segment's forward again just before its
// backward (Chen et al. 2016, "Training deep nets with sublinear memory
// cost"). The segments are chosen to make the checkpoints of every
// micro-batch the stage holds plus one segment's activations least: about
// sqrt(n) segments of a uniform chain for one micro-batch, fewer as a
// pipeline stage holds more (a deep 1F1B pipeline's first stage holds p
// micro-batches, and keeps little more than each one's input).
// -whale-rank-programs cuts the segments, -whale-balance and the
// auto_parallel cut count their memory: one function, one answer.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_RECOMPUTE_H
#define WHALE_LOWERING_RECOMPUTE_H

#include "dialects/Whale/IR/TrainAttrs.h"
#include "dialects/Whale/IR/WhaleOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace whale::plan {

/// Whether the model's config asks for recomputation.
inline bool recomputes(mlir::Operation *op) {
  return settingsOf(op).getRecompute();
}

inline double outputBytes(mlir::Operation *op) {
  auto cost = mlir::dyn_cast<CostOpInterface>(op);
  return cost ? double(cost.getOutputMemory()) : 0;
}

/// The ops that read `v`, seen through the yield of a TaskGraph (a value
/// leaving its TaskGraph is read through the TaskGraph's result).
template <class F> void forEachReader(mlir::Value v, F &&f) {
  for (mlir::OpOperand &use : v.getUses()) {
    if (auto yield = mlir::dyn_cast<YieldOp>(use.getOwner())) {
      mlir::Value out = yield->getParentOp()->getResult(use.getOperandNumber());
      for (mlir::Operation *user : out.getUsers())
        f(user);
    } else {
      f(use.getOwner());
    }
  }
}

/// Where each segment of `ops` (a stage's forward, in order) ends, for a
/// stage that holds `held` micro-batches at once. The cut that makes what
/// the stage holds least, as the memory model counts it
/// (rowBytesRecomputing, StageMemory.h): the bytes crossing its cuts (the
/// checkpoints) for each micro-batch held and about one more for their
/// gradients, plus three times its largest segment (one segment's
/// activations again, their gradients and the gradients' temporaries).
/// For each bound S on
/// a segment's bytes (a geometric ladder from the largest op to the
/// whole), the cuts of least crossing bytes with every segment within S;
/// then the best S. A transformer is cut between blocks, where only the
/// residual crosses, as many blocks a segment as balance the two terms.
///
/// `share`, where given, is the part of each op's values one rank holds
/// (-whale-balance counts a split TaskGraph's values before sharding, at a
/// rank's share of them where its group shares rows); all of them
/// otherwise.
using ShareOf = llvm::function_ref<double(mlir::Operation *)>;

inline llvm::SmallVector<size_t>
recomputeSegments(llvm::ArrayRef<mlir::Operation *> ops, int64_t held = 1,
                  ShareOf share = nullptr) {
  const double perCheckpoint = double(std::max<int64_t>(1, held) + 1);
  const size_t n = ops.size();
  llvm::DenseMap<mlir::Operation *, size_t> index;
  for (auto [i, op] : llvm::enumerate(ops))
    index[op] = i;
  auto part = [&](mlir::Operation *op) { return share ? share(op) : 1.0; };
  // crossing[j]: bytes made at or before op j and read after it (a reader
  // the list does not hold keeps a value to the end).
  llvm::SmallVector<double> crossing(n + 1, 0), cumulative(n + 1, 0);
  double largest = 0;
  for (size_t i = 0; i < n; ++i) {
    const double w = part(ops[i]);
    cumulative[i + 1] = cumulative[i] + outputBytes(ops[i]) * w;
    largest = std::max(largest, outputBytes(ops[i]) * w);
    for (mlir::Value r : ops[i]->getResults()) {
      auto t = mlir::dyn_cast<mlir::RankedTensorType>(r.getType());
      if (!t)
        continue;
      size_t last = i;
      forEachReader(r, [&](mlir::Operation *user) {
        auto it = index.find(user);
        last = std::max(last, it == index.end() ? n : it->second);
      });
      crossing[i] += double(tensorBytes(t)) * w;
      crossing[last] -= double(tensorBytes(t)) * w;
    }
  }
  for (size_t j = 1; j <= n; ++j)
    crossing[j] += crossing[j - 1];
  const double total = cumulative[n];
  llvm::SmallVector<size_t> bestEnds = {n};
  double bestBytes = 3 * total; // one segment: nothing crosses
  llvm::SmallVector<double> cost(n + 1);
  llvm::SmallVector<size_t> from(n + 1);
  for (double bound = std::max(largest, 1.0);; bound *= 1.5) {
    bound = std::min(bound, total);
    // cost[e]: the least crossing bytes that cut ops [0, e) into segments
    // within the bound; from[e]: where its last segment starts.
    std::fill(cost.begin(), cost.end(), std::numeric_limits<double>::infinity());
    cost[0] = 0;
    for (size_t e = 1; e <= n; ++e)
      for (size_t a = e; a-- > 0;) {
        if (cumulative[e] - cumulative[a] > bound)
          break;
        double c = cost[a] + (a ? crossing[a - 1] : 0);
        if (c < cost[e]) {
          cost[e] = c;
          from[e] = a;
        }
      }
    if (cost[n] < std::numeric_limits<double>::infinity()) {
      llvm::SmallVector<size_t> ends;
      double biggest = 0;
      for (size_t e = n; e > 0; e = from[e]) {
        ends.push_back(e);
        biggest = std::max(biggest, cumulative[e] - cumulative[from[e]]);
      }
      std::reverse(ends.begin(), ends.end());
      const double bytes = perCheckpoint * cost[n] + 3 * biggest;
      if (bytes < bestBytes) {
        bestBytes = bytes;
        bestEnds = std::move(ends);
      }
    }
    if (bound >= total)
      break;
  }
  return bestEnds;
}

/// What a stage that holds `held` micro-batches keeps under recomputation,
/// in bytes at the batch its ops are elaborated at: per micro-batch in
/// flight, the checkpoints (values one segment makes and a later one
/// reads); and at most, one segment's activations (as it is recomputed for
/// its backward). The segments are those -whale-rank-programs cuts.
struct RecomputeBytes {
  double checkpoints = 0, segment = 0;
};

inline RecomputeBytes recomputeBytes(llvm::ArrayRef<mlir::Operation *> ops,
                                     int64_t held = 1,
                                     ShareOf share = nullptr) {
  llvm::SmallVector<size_t> ends = recomputeSegments(ops, held, share);
  auto part = [&](mlir::Operation *op) { return share ? share(op) : 1.0; };
  llvm::DenseMap<mlir::Operation *, size_t> segmentOf;
  size_t begin = 0;
  RecomputeBytes out;
  for (auto [s, end] : llvm::enumerate(ends)) {
    double bytes = 0;
    for (size_t i = begin; i < end; ++i) {
      segmentOf[ops[i]] = s;
      bytes += outputBytes(ops[i]) * part(ops[i]);
    }
    out.segment = std::max(out.segment, bytes);
    begin = end;
  }
  for (mlir::Operation *op : ops)
    for (mlir::Value r : op->getResults()) {
      auto t = mlir::dyn_cast<mlir::RankedTensorType>(r.getType());
      if (!t)
        continue;
      bool later = false;
      forEachReader(r, [&](mlir::Operation *user) {
        auto it = segmentOf.find(user);
        later = later || (it != segmentOf.end() &&
                          it->second > segmentOf.lookup(op));
      });
      if (later)
        out.checkpoints += double(tensorBytes(t)) * part(op);
    }
  return out;
}

} // namespace whale::plan

#endif // WHALE_LOWERING_RECOMPUTE_H
