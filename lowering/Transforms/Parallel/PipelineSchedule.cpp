//===- PipelineSchedule.cpp - -whale-pipeline -----------------------------===//
//
// Cuts each replica's share of the global batch into micro-batches and
// writes each stage's order of forward (F) and backward (B) steps, as
// lowering/Transforms/Parallel/PipelineOrder.h lays them out: gpipe, 1f1b, and
// either of them interleaved over v model chunks a stage (virtual_stages = v).
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"
#include "lowering/Plan.h"
#include "lowering/Transforms/Parallel/ClusterView.h"
#include "lowering/Transforms/Parallel/PipelineOrder.h"

namespace whale {
#define GEN_PASS_DEF_WHALEPIPELINE
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

struct PipelinePass : public whale::impl::WhalePipelineBase<PipelinePass> {
  using Base::Base;

  LogicalResult schedule(func::FuncOp fn, OpBuilder &b) {
    const ModelPlan plan = ModelPlan::of(fn);
    if (!plan)
      return fn.emitOpError("has no plan; run -whale-virtual-devices first");
    int64_t m = microBatches;
    if (m == 0)
      m = settingsOf(fn).microBatches();
    m = std::max<int64_t>(m, 1);
    std::string kind = scheduleKind;
    if (kind.empty())
      if (std::optional<PipelineSchedule> k = settingsOf(fn).getSchedule())
        kind = stringifyPipelineSchedule(*k).str();
    if (kind.empty())
      kind = "1f1b";
    std::optional<PipelineSchedule> schedule = symbolizePipelineSchedule(kind);
    if (!schedule)
      return fn.emitOpError("schedule must be \"gpipe\" or \"1f1b\", not \"")
             << kind << "\"";

    int64_t batch = globalBatch ? globalBatch : plan::trainBatch(fn);
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
    const int64_t replicas = plan.replicas().value_or(1) / plan.rowGroupOrOne();
    const int64_t stages = plan.stages().value_or(1);
    const int64_t chunks = plan.chunks().value_or(1);
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
    bool unequal = !settingsOf(fn).even() &&
                   (plan::clusterOf(fn, plan.devices().value_or(1)).uneven() ||
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
      FailureOr<int64_t> s = plan::checkedStage(tg, stages);
      if (failed(s))
        return failure();
      std::vector<ScheduleStep> order =
          plan::pipelineOrder(kind, *s, stages, m, chunks);
      tg->setAttr("schedule", ScheduleAttr::get(b.getContext(), order));
    }
    PlanUpdate(fn)
        .globalBatch(batch)
        .microBatches(m)
        .microBatch(std::max<int64_t>(1, batch / (replicas * m)))
        .schedule(*schedule)
        .apply();
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
