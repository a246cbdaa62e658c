//===- FusedSpace.cpp - the iteration space of a fused region ------------===//

#include "lowering/Transforms/Fusion/FusedSpace.h"

using namespace mlir;

namespace whale {

SmallVector<ResultShape> resultShapes(FusedOp op, ArrayRef<int64_t> shape) {
  SmallVector<ResultShape> out;
  for (Value v : op.getBody().front().getTerminator()->getOperands()) {
    ResultShape r;
    r.kept.assign(shape.size(), true);
    Operation *def = v.getDefiningOp();
    if (def && FusedOp::isFusibleReduction(def)) {
      r.kept = FusedOp::keptDimensions(def, shape);
      r.reduced = true;
      r.mean = isa<ReduceMeanOp>(def);
    }
    out.push_back(std::move(r));
  }
  return out;
}

Collapsed collapse(ArrayRef<int64_t> shape, TypeRange inputs,
                   ArrayRef<ResultShape> results) {
  const size_t rank = shape.size();
  Collapsed out;
  out.reads.resize(inputs.size());
  out.keeps.resize(results.size());
  SmallVector<bool> last;
  for (size_t d = 0; d < rank; ++d) {
    if (shape[d] == 1)
      continue; // every operand has 1 here or lacks the dimension
    SmallVector<bool> status;
    for (Type t : inputs) {
      ArrayRef<int64_t> in = cast<RankedTensorType>(t).getShape();
      size_t lead = rank - in.size();
      status.push_back(d >= lead && in[d - lead] == shape[d]);
    }
    for (const ResultShape &r : results)
      status.push_back(r.kept[d]);
    if (!out.extents.empty() && status == last) {
      out.extents.back() *= shape[d];
      continue;
    }
    out.extents.push_back(shape[d]);
    for (size_t i = 0; i < inputs.size(); ++i)
      out.reads[i].push_back(status[i]);
    for (size_t i = 0; i < results.size(); ++i)
      out.keeps[i].push_back(status[inputs.size() + i]);
    last = status;
  }
  if (out.extents.empty()) { // a single element
    out.extents.push_back(1);
    for (auto &r : out.reads)
      r.push_back(true);
    for (auto &k : out.keeps)
      k.push_back(true);
  }
  return out;
}

} // namespace whale
