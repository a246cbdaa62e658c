//===- PipelineSchedule.cpp - -whale-pipeline -----------------------------===//
//
// Cuts each replica's share of the global batch into micro-batches and
// writes each stage's order of forward (F) and backward (B) steps:
//
//   gpipe  every forward, then every backward: a stage holds the
//          activations of all m micro-batches at once;
//   1f1b   stage s runs p - 1 - s forwards ahead, then alternates one
//          forward and one backward, then drains (PipeDream-flush, DAPPLE):
//          it holds at most p - s micro-batches.
//
// With one stage, micro-batches are gradient accumulation (F0 B0 F1 B1 ...).
//
// With v model chunks a stage (virtual_stages = v, Megatron-LM's
// interleaved schedule) each stage runs the forwards of p micro-batches on
// chunk 0, then the same p on chunk 1, ..., then the next p on chunk 0; the
// backwards likewise, from the last chunk down. Under 1f1b, stage s runs
// 2 (p - 1 - s) + (v - 1) p such forwards ahead, then alternates: the
// bubble shrinks v times, for v times the messages. Needs m a multiple of
// p, as the groups of p do.
//
//===----------------------------------------------------------------------===//

#include "lowering/ClusterView.h"
#include "lowering/Passes.h"
#include "lowering/Plan.h"

namespace whale {
#define GEN_PASS_DEF_WHALEPIPELINE
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

SmallVector<ScheduleStep> stageOrder(StringRef kind, int64_t s, int64_t p,
                                     int64_t m) {
  SmallVector<ScheduleStep> order;
  auto f = [&](int64_t j) { order.push_back(ScheduleStep::forward(j)); };
  auto bw = [&](int64_t j) { order.push_back(ScheduleStep::backwardOf(j)); };
  if (kind == "gpipe" && p > 1) {
    for (int64_t j = 0; j < m; ++j)
      f(j);
    for (int64_t j = 0; j < m; ++j)
      bw(j);
    return order;
  }
  int64_t warm = std::min(p - 1 - s, m);
  for (int64_t j = 0; j < warm; ++j)
    f(j);
  for (int64_t j = 0; j < m - warm; ++j) {
    f(warm + j);
    bw(j);
  }
  for (int64_t j = m - warm; j < m; ++j)
    bw(j);
  return order;
}

/// Stage s's order with v > 1 chunks: the k-th forward (or backward) of
/// the stage is micro-batch g p + (k mod p) of chunk (k / p) mod v (the
/// backwards' chunks counted from the last), in groups g of p v steps.
SmallVector<ScheduleStep> interleavedOrder(StringRef kind, int64_t s, int64_t p,
                                           int64_t m, int64_t v) {
  auto step = [&](int64_t k, bool backward) {
    int64_t group = k / (p * v), at = k % (p * v), chunk = at / p;
    return ScheduleStep{backward, group * p + at % p,
                        backward ? v - 1 - chunk : chunk};
  };
  const int64_t total = m * v;
  const int64_t warm =
      kind == "gpipe" ? total : std::min(total, 2 * (p - 1 - s) + (v - 1) * p);
  SmallVector<ScheduleStep> order;
  for (int64_t k = 0; k < warm; ++k)
    order.push_back(step(k, false));
  for (int64_t k = 0; k < total - warm; ++k) {
    order.push_back(step(warm + k, false));
    order.push_back(step(k, true));
  }
  for (int64_t k = total - warm; k < total; ++k)
    order.push_back(step(k, true));
  return order;
}

struct PipelinePass : public whale::impl::WhalePipelineBase<PipelinePass> {
  using Base::Base;

  LogicalResult schedule(func::FuncOp fn, OpBuilder &b) {
    DictionaryAttr planAttr = plan::planOf(fn);
    if (!planAttr)
      return fn.emitOpError("has no plan; run -whale-virtual-devices first");
    int64_t m = microBatches;
    if (m == 0)
      m = settingsOf(fn).microBatches();
    m = std::max<int64_t>(m, 1);
    std::string kind = scheduleKind;
    if (kind.empty())
      kind = settingsOf(fn).getSchedule().str();
    if (kind.empty())
      kind = "1f1b";
    if (kind != "gpipe" && kind != "1f1b")
      return fn.emitOpError("schedule must be \"gpipe\" or \"1f1b\", not \"")
             << kind << "\"";

    int64_t batch = globalBatch;
    if (batch == 0)
      if (auto train = fn->getAttrOfType<DictionaryAttr>("whale.train"))
        batch = plan::intOf(train.getAs<DictionaryAttr>("data"), "batch");
    if (batch == 0) {
      auto first = fn.getNumArguments()
                       ? dyn_cast<RankedTensorType>(fn.getArgumentTypes()[0])
                       : RankedTensorType();
      if (!first || first.getRank() == 0)
        return fn.emitOpError("has no batch to cut: give it a train block or "
                              "the pass a global-batch");
      batch = first.getShape()[0];
    }
    // Replicas that share their rows (a shard group under split_rows =
    // "whole") take one share of the batch.
    const int64_t replicas =
        plan::intOf(planAttr, "replicas", 1) / plan::rowGroupOf(planAttr);
    const int64_t stages = plan::intOf(planAttr, "stages", 1);
    const int64_t chunks = plan::intOf(planAttr, "chunks", 1);
    if (chunks > 1 && m % stages != 0)
      return fn.emitOpError("interleaves ")
             << chunks << " chunks a stage over " << stages
             << " stages, which runs micro-batches in groups of " << stages
             << ": num_micro_batch = " << m << " must be a multiple of "
             << stages;
    // Balanced by hardware, -whale-balance gives replicas unequal shares
    // where the devices differ, and where the batch does not cut evenly
    // (on equal devices, shares a sample apart): only whole micro-batches
    // are needed here.
    bool unequal =
        !settingsOf(fn).even() &&
        (plan::clusterOf(fn, plan::intOf(planAttr, "devices", 1)).uneven() ||
         batch % (replicas * m) != 0);
    if (unequal && batch % m != 0)
      return fn.emitOpError("the global batch of ")
             << batch << " cannot be cut into " << m
             << " micro-batches: use a multiple of " << m;
    if (unequal && batch < replicas * m)
      return fn.emitOpError("the global batch of ")
             << batch << " is too small for " << replicas << " replica"
             << (replicas == 1 ? "" : "s") << " x " << m << " micro-batch"
             << (m == 1 ? "" : "es")
             << ": each replica needs a sample in each micro-batch; use a "
                "batch of at least "
             << replicas * m;
    if (!unequal && batch % (replicas * m) != 0)
      return fn.emitOpError("the global batch of ")
             << batch << " cannot be cut into " << replicas << " replica"
             << (replicas == 1 ? "" : "s") << " x " << m << " micro-batch"
             << (m == 1 ? "" : "es")
             << " of equal size: use a batch that is a multiple of "
             << replicas * m
             << ", another num_micro_batch, or balance = \"hardware\"";

    for (TaskGraphOp tg : plan::taskGraphs(fn)) {
      auto s = tg->getAttrOfType<IntegerAttr>("stage");
      if (!s)
        return tg.emitOpError("has no stage; run -whale-virtual-devices first");
      SmallVector<ScheduleStep> order =
          chunks > 1 ? interleavedOrder(kind, s.getInt(), stages, m, chunks)
                     : stageOrder(kind, s.getInt(), stages, m);
      tg->setAttr("schedule", ScheduleAttr::get(b.getContext(), order));
    }
    plan::updatePlan(
        fn, {b.getNamedAttr("global_batch", b.getI64IntegerAttr(batch)),
             b.getNamedAttr("micro_batches", b.getI64IntegerAttr(m)),
             b.getNamedAttr("micro_batch",
                            b.getI64IntegerAttr(std::max<int64_t>(
                                1, batch / (replicas * m)))),
             b.getNamedAttr("schedule", b.getStringAttr(kind))});
    return success();
  }

  void runOnOperation() override {
    OpBuilder b(&getContext());
    if (!plan::forEachModel(getOperation(),
                            [&](func::FuncOp fn) { return schedule(fn, b); }))
      signalPassFailure();
  }
};

} // namespace
