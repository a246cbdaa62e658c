//===- Plan.h - what the planning passes record, and how to read it -*- C++
//-*-===//
//
// The planning passes annotate a model function step by step:
//
//   -whale-taskgraph-partition  every op in a TaskGraph, in program order
//   -whale-virtual-devices      TaskGraph attrs `stage`, `virtual_device`;
//                               the plan's devices, stages, replicas, grid,
//                               shards, chunks, row_group
//   -whale-pipeline             its micro_batches, micro_batch,
//                               global_batch, schedule; TaskGraph attr
//                               `schedule` (["F0", "B0", ...])
//   -whale-balance              its balance, local batches, costs
//   -whale-data-parallel        its grad_weight and buckets
//   -whale-rank-programs        one function per stage, `whale.rank`
//
// The plan (`whale.plan`) is typed: ModelPlan reads it and PlanUpdate
// writes it (dialects/Whale/IR/Plan.h, every entry in PlanEntries.def).
//
// The grid: grid[s * replicas + r] is the physical device (rank) of stage s,
// replica r.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_PLAN_H
#define WHALE_LOWERING_PLAN_H

#include "dialects/Whale/IR/Plan.h"
#include "dialects/Whale/IR/TrainAttrs.h"
#include "dialects/Whale/IR/WhaleOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <algorithm>

namespace whale::plan {

/// The TaskGraphs of a model, in program order.
inline llvm::SmallVector<TaskGraphOp> taskGraphs(mlir::func::FuncOp fn) {
  llvm::SmallVector<TaskGraphOp> tgs;
  for (mlir::Operation &op : fn.getBody().front())
    if (auto tg = llvm::dyn_cast<TaskGraphOp>(op))
      tgs.push_back(tg);
  return tgs;
}

/// The integer `key` of a dictionary (a train block, a rank's place), or
/// `dflt`. The plan itself is typed: ModelPlan (dialects/Whale/IR/Plan.h).
inline int64_t intOf(mlir::DictionaryAttr d, llvm::StringRef key,
                     int64_t dflt = 0) {
  if (!d)
    return dflt;
  if (auto i = d.getAs<mlir::IntegerAttr>(key))
    return i.getInt();
  return dflt;
}

/// The global batch `model`'s train block asks for (its data's `batch`);
/// 0 where it has none. The one reader of it (the planner's passes, the
/// search).
inline int64_t trainBatch(mlir::Operation *model) {
  return intOf(TrainBlock::of(model).data, "batch", 0);
}

/// A TaskGraph's pipeline stage (its `stage`), -1 where it has none.
inline int64_t stageOf(TaskGraphOp tg) {
  auto s =
      tg ? tg->getAttrOfType<mlir::IntegerAttr>("stage") : mlir::IntegerAttr();
  return s ? s.getInt() : -1;
}
/// The stage that defines `v`; -1 for model inputs.
inline int64_t stageOf(mlir::Value v) {
  mlir::Operation *def = v.getDefiningOp();
  return def ? stageOf(def->getParentOfType<TaskGraphOp>()) : -1;
}

/// A TaskGraph's pipeline stage, for a pass that indexes the plan's
/// `stages` by it: an error on the TaskGraph where it has none (the
/// virtual-devices pass gives it one) or names one the plan lacks.
inline mlir::FailureOr<int64_t> checkedStage(TaskGraphOp tg, int64_t stages) {
  auto s = tg->getAttrOfType<mlir::IntegerAttr>("stage");
  if (!s)
    return tg.emitOpError("has no stage; run -whale-virtual-devices first");
  const int64_t stage = s.getInt();
  if (stage < 0 || stage >= stages)
    return tg.emitOpError("is stage ")
           << stage << ", but the plan has " << stages << " stage"
           << (stages == 1 ? "" : "s");
  return stage;
}

/// The model chunk (a TaskGraph's `chunk`, 0 without one) that defines
/// `v`: under an interleaved schedule a stage holds several.
inline int64_t chunkOf(mlir::Value v) {
  mlir::Operation *def = v.getDefiningOp();
  auto tg = def ? def->getParentOfType<TaskGraphOp>() : TaskGraphOp();
  auto c =
      tg ? tg->getAttrOfType<mlir::IntegerAttr>("chunk") : mlir::IntegerAttr();
  return c ? c.getInt() : 0;
}

/// The value a TaskGraph result stands for: the operand of its yield.
inline mlir::Value throughYields(mlir::Value v) {
  while (auto r = llvm::dyn_cast<mlir::OpResult>(v)) {
    auto tg = llvm::dyn_cast<TaskGraphOp>(r.getOwner());
    if (!tg)
      break;
    v = tg.getBody().front().getTerminator()->getOperand(r.getResultNumber());
  }
  return v;
}

/// Runs `step` on every model function of `module` (collected first, so a
/// step may add functions); false as soon as one fails.
inline bool forEachModel(
    mlir::ModuleOp module,
    llvm::function_ref<mlir::LogicalResult(mlir::func::FuncOp)> step) {
  llvm::SmallVector<mlir::func::FuncOp> models;
  module.walk([&](mlir::func::FuncOp fn) {
    if (fn->hasAttr("whale.model"))
      models.push_back(fn);
  });
  for (mlir::func::FuncOp fn : models)
    if (mlir::failed(step(fn)))
      return false;
  return true;
}

} // namespace whale::plan

#endif
