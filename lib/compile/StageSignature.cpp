//===- StageSignature.cpp - what a planned stage program takes and makes --===//

#include "lib/compile/StageSignature.h"

#include "dialects/Whale/IR/TrainAttrs.h"
#include "dialects/Whale/IR/WhaleOps.h"
#include "lib/compile/DataSpec.h"
#include "lowering/Passes.h"

#include "mlir/Pass/PassManager.h"

namespace whale {

bool describeStage(mlir::func::FuncOp fn, StageProgram &out,
                   std::string &error) {
  out = StageProgram();
  out.entry = fn.getSymName().str();
  const llvm::StringMap<Parameter> owners = stateOwners(fn);
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
    if (auto it = owners.find(op.getName()); it != owners.end()) {
      param.stateOwner = it->second.stateOwner;
      param.ownerShards = it->second.ownerShards;
      param.sharding = it->second.sharding;
      param.valueOwned = op.getOwner().has_value();
    }
    out.params.push_back(param);
  });
  for (mlir::Type t : fn.getArgumentTypes()) {
    out.inputs.emplace_back();
    if (!tensorSpecOf(t, out.inputs.back(), error))
      return false;
  }
  return true;
}

llvm::StringMap<Parameter> stateOwners(mlir::func::FuncOp fn) {
  llvm::StringMap<Parameter> out;
  fn.walk([&](mlir::Operation *op) {
    auto owner = op->getAttrOfType<mlir::IntegerAttr>("owner");
    if (!owner || !mlir::isa<SgdUpdateOp, AdamUpdateOp>(op))
      return;
    if (auto p = op->getOperand(0).getDefiningOp<ParamOp>()) {
      Parameter &where = out[p.getName()];
      where.name = p.getName().str();
      where.stateOwner = owner.getInt();
      if (auto shards = op->getAttrOfType<mlir::IntegerAttr>("shards"))
        where.ownerShards = shards.getInt();
      // Owners in sharding groups of the config's shard_group replicas
      // (shard_group / shards shard peers).
      auto group = op->getAttrOfType<mlir::StringAttr>("group");
      if (group && group.getValue() == "hsdp") {
        const int64_t s = settingsOf(op).shardingGroup();
        where.sharding = where.ownerShards > 0 ? s / where.ownerShards : s;
      }
    }
  });
  return out;
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
