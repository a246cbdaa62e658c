//===- Planner.cpp - from a loaded model to its rank programs -------------===//

#include "lib/Planner.h"

#include "dialects/Whale/IR/WhaleOps.h"
#include "lib/ModelLookup.h"
#include "lowering/Passes.h"
#include "lowering/Plan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"

namespace whale {
namespace {

/// Runs `build`'s passes on `module`, collecting their errors as
/// `file:line:col: error: message` lines.
bool runPasses(mlir::ModuleOp module,
               const std::function<void(mlir::PassManager &)> &build,
               std::string &error) {
  mlir::MLIRContext *ctx = module.getContext();
  std::string messages;
  mlir::ScopedDiagnosticHandler handler(ctx, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() != mlir::DiagnosticSeverity::Error)
      return mlir::success();
    std::string where;
    if (auto loc = mlir::dyn_cast<mlir::FileLineColLoc>(d.getLocation()))
      where = loc.getFilename().str() + ":" + std::to_string(loc.getLine()) +
              ":" + std::to_string(loc.getColumn()) + ": ";
    messages += (messages.empty() ? "" : "\n") + where + "error: " + d.str();
    return mlir::success();
  });
  mlir::PassManager pm(ctx);
  build(pm);
  if (mlir::succeeded(pm.run(module)))
    return true;
  error = messages.empty() ? "planning failed" : messages;
  return false;
}

void planningPasses(mlir::PassManager &pm, int64_t devices) {
  pm.addPass(createWhaleTaskGraphPartition());
  WhaleVirtualDevicesOptions vd;
  vd.devices = devices;
  pm.addPass(createWhaleVirtualDevices(vd));
  pm.addPass(createWhalePipeline());
  pm.addPass(createWhaleDataParallel());
  pm.addPass(createWhaleSharding());
}

/// The planned copy of `name`, alone in its module.
mlir::func::FuncOp onlyModel(mlir::ModuleOp module, const std::string &name) {
  mlir::func::FuncOp keep;
  for (auto fn : llvm::make_early_inc_range(module.getOps<mlir::func::FuncOp>()))
    if (fn.getName() == name)
      keep = fn;
    else
      fn.erase();
  return keep;
}

} // namespace

bool planModel(Interpreter &interp, const std::string &modelName,
               int64_t devices, PlannedModel &out, std::string &error) {
  mlir::func::FuncOp model =
      findModel(interp, modelName, /*needsTrainBlock=*/true, error);
  if (!model)
    return false;
  out.model = model.getName().str();
  out.devices = devices;

  // First at the global batch: how many replicas and micro-batches.
  mlir::OwningOpRef<mlir::ModuleOp> global = interp.module().clone();
  onlyModel(*global, out.model);
  if (!runPasses(
          *global, [&](mlir::PassManager &pm) { planningPasses(pm, devices); },
          error))
    return false;
  auto fn = global->lookupSymbol<mlir::func::FuncOp>(out.model);
  mlir::DictionaryAttr plan = plan::planOf(fn);
  out.microBatch = plan::intOf(plan, "micro_batch");

  // Then at the micro-batch: the shapes each rank computes with.
  out.micro = interp.atBatch(out.microBatch);
  if (!out.micro || !out.micro->module()) {
    error = "elaborating the model at its micro-batch of " +
            std::to_string(out.microBatch) + " failed" +
            (out.micro ? ":\n" + out.micro->renderDiagnostics() : "");
    return false;
  }
  out.planned = out.micro->module().clone();
  onlyModel(*out.planned, out.model);
  if (!runPasses(
          *out.planned,
          [&](mlir::PassManager &pm) { planningPasses(pm, devices); }, error))
    return false;
  out.ranks = out.planned->clone();
  if (!runPasses(
          *out.ranks,
          [](mlir::PassManager &pm) { pm.addPass(createWhaleRankPrograms()); },
          error))
    return false;

  fn = out.planned->lookupSymbol<mlir::func::FuncOp>(out.model);
  plan = plan::planOf(fn);
  out.stages = plan::intOf(plan, "stages", 1);
  out.replicas = plan::intOf(plan, "replicas", 1);
  out.globalBatch = plan::intOf(plan, "global_batch");
  out.microBatches = plan::intOf(plan, "micro_batches", 1);
  out.schedule = plan.getAs<mlir::StringAttr>("schedule").str();
  auto grid = plan.getAs<mlir::DenseI64ArrayAttr>("grid");
  out.grid.assign(grid.asArrayRef().begin(), grid.asArrayRef().end());
  return true;
}

} // namespace whale
