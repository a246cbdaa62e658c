//===- RankPrograms.cpp - what a planned stage program takes and makes ----===//

#include "lib/RankPrograms.h"

#include "dialects/Whale/IR/WhaleOps.h"
#include "lib/DataSource.h"
#include "lowering/Passes.h"

#include "mlir/Pass/PassManager.h"

namespace whale {

bool describeStage(mlir::func::FuncOp fn, StageProgram &out,
                   std::string &error) {
  out = StageProgram();
  out.entry = fn.getSymName().str();
  // Optimizer state sharded over a group (-whale-shard-optimizer): the
  // owner each update names.
  llvm::StringMap<std::pair<int64_t, int64_t>> owners;
  fn.walk([&](mlir::Operation *op) {
    auto owner = op->getAttrOfType<mlir::IntegerAttr>("owner");
    auto p = op->getNumOperands() ? op->getOperand(0).getDefiningOp<ParamOp>()
                                   : ParamOp();
    if (owner && p && mlir::isa<SgdUpdateOp, AdamUpdateOp>(op)) {
      auto shards = op->getAttrOfType<mlir::IntegerAttr>("shards");
      owners[p.getName()] = {owner.getInt(), shards ? shards.getInt() : 0};
    }
  });
  fn.walk([&](ParamOp op) {
    Parameter param{op.getName().str(),
                    std::vector<int64_t>(op.getFullType().getShape())};
    if (std::optional<llvm::ArrayRef<int64_t>> shard = op.getShard()) {
      param.axis = (*shard)[0];
      param.shards = (*shard)[1];
      if (std::optional<llvm::ArrayRef<int64_t>> w = op.getShardWeights())
        param.weights.assign(w->begin(), w->end());
      out.shards = param.shards;
    }
    if (auto it = owners.find(op.getName()); it != owners.end())
      std::tie(param.stateOwner, param.ownerShards) = it->second;
    out.params.push_back(param);
  });
  for (mlir::Type t : fn.getArgumentTypes()) {
    out.inputs.emplace_back();
    if (!tensorSpecOf(t, out.inputs.back(), error))
      return false;
  }
  return true;
}

mlir::OwningOpRef<mlir::ModuleOp> hostForward(Interpreter &interp) {
  mlir::OwningOpRef<mlir::ModuleOp> forward = interp.module().clone();
  mlir::PassManager pm(&interp.context());
  pm.addPass(createWhaleFuseAttention());
  if (mlir::failed(pm.run(*forward)))
    return nullptr;
  return forward;
}

} // namespace whale
