//===- DataParallelSync.cpp - -whale-data-parallel ------------------------===//
//
// Plans the gradient synchronization of replicated parameters. Each rank
// differentiates the mean loss of its micro-batch; weighting that by
// micro_batch / global_batch makes the sum over micro-batches and replicas
// the gradient of the global batch's mean loss, so the all-reduce is a plain
// sum. Gradients are reduced in buckets of about bucket-bytes, filled in the
// order backward produces them (the last parameters first).
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"
#include "lowering/Plan.h"

namespace whale {
#define GEN_PASS_DEF_WHALEDATAPARALLEL
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

struct DataParallelPass
    : public whale::impl::WhaleDataParallelBase<DataParallelPass> {
  using Base::Base;

  LogicalResult sync(func::FuncOp fn, OpBuilder &b) {
    const ModelPlan plan = ModelPlan::of(fn);
    int64_t micro = plan.microBatch().value_or(0),
            global = plan.globalBatch().value_or(0),
            stages = plan.stages().value_or(1);
    if (!micro || !global)
      return fn.emitOpError("has no micro-batches; run -whale-pipeline first");
    auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
    Value loss = ret.getNumOperands() == 1
                     ? plan::throughYields(ret.getOperand(0))
                     : Value();
    auto mean = loss ? loss.getDefiningOp<ReduceMeanOp>() : ReduceMeanOp();
    if (!mean || mean.getType().getRank() != 0)
      return fn.emitOpError(
          "weights each part of the batch by its size, which needs the loss "
          "to be a mean over the batch (a reduce_mean to a scalar)");

    // Per stage, its parameters in the order backward reaches them.
    SmallVector<SmallVector<ParamOp>> params(stages);
    for (TaskGraphOp tg : plan::taskGraphs(fn)) {
      FailureOr<int64_t> s = plan::checkedStage(tg, stages);
      if (failed(s))
        return failure();
      tg.walk([&](ParamOp p) {
        if (!p.getFrozen()) // no gradient to sync
          params[*s].push_back(p);
      });
    }
    // The config's bucket size, else the pass's.
    const int64_t limit = settingsOf(fn).getBucketBytes() > 0
                              ? settingsOf(fn).getBucketBytes()
                              : int64_t(bucketBytes);
    SmallVector<Attribute> perStage;
    for (auto &stageParams : params) {
      SmallVector<Attribute> buckets, bucket;
      int64_t bytes = 0;
      for (ParamOp p : llvm::reverse(stageParams)) {
        int64_t size = tensorBytes(p.getType());
        if (!bucket.empty() && bytes + size > limit) {
          buckets.push_back(b.getArrayAttr(bucket));
          bucket.clear();
          bytes = 0;
        }
        bucket.push_back(p.getNameAttr());
        bytes += size;
      }
      if (!bucket.empty())
        buckets.push_back(b.getArrayAttr(bucket));
      perStage.push_back(b.getArrayAttr(buckets));
    }
    PlanUpdate(fn)
        .gradWeight(double(micro) / double(global))
        .buckets(b.getArrayAttr(perStage))
        .apply();
    return success();
  }

  void runOnOperation() override {
    OpBuilder b(&getContext());
    if (!plan::forEachModel(getOperation(),
                            [&](func::FuncOp fn) { return sync(fn, b); }))
      signalPassFailure();
  }
};

} // namespace
