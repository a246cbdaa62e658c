//===- Recompute.h - activation recomputation's segments ----------*- C++
//-*-===//
//
// With `recompute = true` a stage keeps, of each micro-batch's forward,
// only the values that cross from one segment of its ops to a later one
// (checkpoints), and runs each segment's forward again just before its
// backward (Chen et al. 2016, "Training deep nets with sublinear memory
// cost"). About sqrt(n) segments of near-equal activation bytes make the
// checkpoints and one segment's activations both about sqrt(n) ops' worth.
// -whale-rank-programs cuts the segments, -whale-balance and the
// auto_parallel cut count their memory: one function, one answer.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_RECOMPUTE_H
#define WHALE_LOWERING_RECOMPUTE_H

#include "dialects/Whale/IR/TrainAttrs.h"
#include "dialects/Whale/IR/WhaleOps.h"

#include "llvm/ADT/DenseMap.h"

#include <cmath>

namespace whale::plan {

/// Whether the model's config asks for recomputation.
inline bool recomputes(mlir::Operation *op) {
  return settingsOf(op).getRecompute();
}

inline double outputBytes(mlir::Operation *op) {
  auto cost = mlir::dyn_cast<CostOpInterface>(op);
  return cost ? double(cost.getOutputMemory()) : 0;
}

/// Where each segment of `ops` (a stage's forward, in order) ends.
inline llvm::SmallVector<size_t>
recomputeSegments(llvm::ArrayRef<mlir::Operation *> ops) {
  const size_t n = ops.size();
  const size_t k = std::max<size_t>(1, std::lround(std::sqrt(double(n))));
  double total = 0;
  for (mlir::Operation *op : ops)
    total += outputBytes(op);
  llvm::SmallVector<size_t> ends;
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    sum += outputBytes(ops[i]);
    if (ends.size() + 1 < k && sum >= total * double(ends.size() + 1) / k)
      ends.push_back(i + 1);
  }
  if (ends.empty() || ends.back() != n)
    ends.push_back(n);
  return ends;
}

/// What a stage holds under recomputation, in bytes at the batch its ops
/// are elaborated at: per micro-batch in flight, the checkpoints (values
/// one segment makes and a later one reads); and at most, one segment's
/// activations (as it is recomputed for its backward).
struct RecomputeBytes {
  double checkpoints = 0, segment = 0;
};

inline RecomputeBytes
recomputeBytes(llvm::ArrayRef<mlir::Operation *> ops) {
  llvm::SmallVector<size_t> ends = recomputeSegments(ops);
  llvm::DenseMap<mlir::Operation *, size_t> segmentOf;
  size_t begin = 0;
  RecomputeBytes out;
  for (auto [s, end] : llvm::enumerate(ends)) {
    double bytes = 0;
    for (size_t i = begin; i < end; ++i) {
      segmentOf[ops[i]] = s;
      bytes += outputBytes(ops[i]);
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
      auto note = [&](mlir::Operation *user) {
        auto it = segmentOf.find(user);
        later = later || (it != segmentOf.end() &&
                          it->second > segmentOf.lookup(op));
      };
      for (mlir::OpOperand &use : r.getUses()) {
        // A value leaving its TaskGraph is read through the TaskGraph's
        // result.
        if (auto yield = mlir::dyn_cast<YieldOp>(use.getOwner())) {
          mlir::Value out =
              yield->getParentOp()->getResult(use.getOperandNumber());
          for (mlir::Operation *user : out.getUsers())
            note(user);
        } else {
          note(use.getOwner());
        }
      }
      if (later)
        out.checkpoints += double(tensorBytes(t));
    }
  return out;
}

} // namespace whale::plan

#endif // WHALE_LOWERING_RECOMPUTE_H
