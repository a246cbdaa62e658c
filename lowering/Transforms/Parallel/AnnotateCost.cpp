//===- AnnotateCost.cpp - -whale-annotate-cost ----------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace whale {
#define GEN_PASS_DEF_WHALEANNOTATECOST
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

DictionaryAttr costDict(Builder &b, int64_t flops, int64_t read,
                        int64_t written, int64_t memory) {
  return b.getDictionaryAttr({
      b.getNamedAttr("flops", b.getI64IntegerAttr(flops)),
      b.getNamedAttr("bytes_read", b.getI64IntegerAttr(read)),
      b.getNamedAttr("bytes_written", b.getI64IntegerAttr(written)),
      b.getNamedAttr("memory", b.getI64IntegerAttr(memory)),
  });
}

DictionaryAttr summaryDict(Builder &b, Operation *root) {
  CostSummary s = summarizeCost(root);
  return costDict(b, s.flops, s.bytesRead, s.bytesWritten, s.outputMemory);
}

struct AnnotateCostPass
    : public whale::impl::WhaleAnnotateCostBase<AnnotateCostPass> {
  using WhaleAnnotateCostBase::WhaleAnnotateCostBase;

  void runOnOperation() override {
    Builder b(&getContext());
    getOperation().walk([&](Operation *op) {
      if (isa<TaskGraphOp, func::FuncOp>(op)) {
        op->setAttr("whale.cost", summaryDict(b, op));
        return;
      }
      auto costed = dyn_cast<CostOpInterface>(op);
      if (!costed || totalsOnly)
        return;
      op->setAttr("whale.cost",
                  costDict(b, costed.getFlops(), costed.getBytesRead(),
                           costed.getBytesWritten(), costed.getOutputMemory()));
    });
  }
};

} // namespace
