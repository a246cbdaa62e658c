//===- ShardParameters.cpp - -whale-shard-parameters ----------------------===//
//
// ZeRO stage 3 (the config's `shard_parameters`): each parameter whose
// update -whale-shard-optimizer gave an owner lives on that owner alone.
// The owner updates it in place, as under stage 1, but hands it to nobody
// after the step; instead every member gathers a unit's parameters just
// before it reads them (`whale.gather_params`) and frees the gathered copy
// after its last reader there, so a rank holds its own share of the
// parameters plus the units it is computing.
//
// The unit is a layer: a parameter's name is its call path, and the unit
// is the model's call that made it (`gpt/block_3` of
// `gpt/block_3/attn/q/w`; a parameter made by the model itself is a unit
// of its own). With the config's `gather_layers = k`, k layers in the
// order the program first reads them are one unit: fewer, larger gathers
// (fewer calls, each a latency), more memory gathered at once. A unit's reads
// in program order form runs: a run ends where an op reads another unit's
// parameters, so a layer is gathered before its forward and again before its
// backward, and the last layer, whose backward follows its forward with no
// other layer between, keeps one gathered copy for both (as FSDP does not
// reshard the last layer). Under micro-batches each micro-batch's forward and
// backward gathers again.
//
// Runs on rank programs after -whale-shard-optimizer, which gave the
// owners (and, under shard_parameters, no broadcast after the updates).
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"
#include "lowering/Plan.h"
#include "lowering/Transforms/Parallel/GatherUnits.h"

#include "dialects/Whale/IR/TrainAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace whale {
#define GEN_PASS_DEF_WHALESHARDPARAMETERS
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

/// Places each owned update's parameter on its owner; false (with an
/// error) where one parameter would have two.
bool placeOnOwners(func::FuncOp fn) {
  bool ok = true;
  fn.walk([&](Operation *op) {
    auto owner = op->getAttrOfType<IntegerAttr>("owner");
    if (!owner || !isa<SgdUpdateOp, AdamUpdateOp>(op))
      return;
    auto param = op->getOperand(0).getDefiningOp<ParamOp>();
    if (!param)
      return;
    auto group = op->getAttrOfType<StringAttr>("group");
    auto shards = op->getAttrOfType<IntegerAttr>("shards");
    if (param.getOwnerAttr() &&
        (param.getOwnerAttr() != owner || param.getGroupAttr() != group)) {
      op->emitOpError("updates '")
          << param.getName() << "', which another update places elsewhere";
      ok = false;
      return;
    }
    param.setOwnerAttr(owner);
    param.setGroupAttr(group);
    param.setShardsAttr(shards);
  });
  return ok;
}

/// An owned parameter `op` (or an op in its regions) reads, other than the
/// one an update writes.
void ownedReads(Operation *op, SmallVectorImpl<ParamOp> &out) {
  op->walk([&](Operation *inner) {
    for (OpOperand &use : inner->getOpOperands()) {
      auto param = use.get().getDefiningOp<ParamOp>();
      if (!param || !param.getOwner())
        continue;
      if (isa<SgdUpdateOp, AdamUpdateOp>(inner) && use.getOperandNumber() == 0)
        continue;
      if (!llvm::is_contained(out, param))
        out.push_back(param);
    }
  });
}

/// One gathering: the parameters of a unit that ops read in a row.
struct Run {
  SmallVector<Operation *> readers; ///< top-level ops, in order
  llvm::SetVector<Operation *> params;
};

void gatherBeforeReaders(func::FuncOp fn, OpBuilder &b) {
  Block &body = fn.getBody().front();
  // Each layer's unit under `gather_layers = k`: the layers in the order
  // the walk below first reads them, k at a time (a unit is named after
  // its first layer).
  const int64_t k = settingsOf(fn).layersGathered();
  llvm::StringMap<std::string> unitOf;
  int64_t layers = 0;
  std::string current;
  auto unitOfParam = [&](ParamOp p) -> StringRef {
    auto [it, fresh] = unitOf.try_emplace(plan::gatherUnitOf(p.getName()));
    if (fresh) {
      if (layers++ % k == 0)
        current = it->getKey().str();
      it->second = current;
    }
    return it->second;
  };
  SmallVector<Run> runs;
  llvm::StringMap<size_t> open; // unit -> its run, while no other unit read
  SmallVector<StringRef> lastUnits;
  for (Operation &op : body) {
    if (isa<GatherParamsOp>(op))
      continue;
    SmallVector<ParamOp> read;
    ownedReads(&op, read);
    if (read.empty())
      continue;
    SmallVector<StringRef> units;
    for (ParamOp p : read) {
      StringRef unit = unitOfParam(p);
      if (!llvm::is_contained(units, unit))
        units.push_back(unit);
    }
    for (StringRef unit : units) {
      auto it = open.find(unit);
      if (it == open.end() || !llvm::is_contained(lastUnits, unit)) {
        open[unit] = runs.size();
        runs.emplace_back();
      }
      Run &run = runs[open[unit]];
      run.readers.push_back(&op);
      for (ParamOp p : read)
        if (unitOfParam(p) == unit)
          run.params.insert(p);
    }
    lastUnits = units;
  }
  for (Run &run : runs) {
    // One gather per group the parameters are owned in (a split plan's
    // parts among the shard peers, the rest among the replicas).
    llvm::MapVector<std::pair<Attribute, Attribute>, SmallVector<ParamOp>>
        byGroup;
    for (Operation *op : run.params) {
      auto p = cast<ParamOp>(op);
      byGroup[{p.getGroupAttr(), p.getShardsAttr()}].push_back(p);
    }
    Operation *first = run.readers.front();
    b.setInsertionPoint(first);
    for (auto &[group, params] : byGroup) {
      SmallVector<Value> values;
      SmallVector<int64_t> owners;
      for (ParamOp p : params) {
        values.push_back(p);
        owners.push_back(*p.getOwner());
      }
      auto gather = GatherParamsOp::create(b, first->getLoc(), values, owners,
                                           *params.front().getGroup(),
                                           params.front().getShardsAttr());
      DenseMap<Value, Value> gathered;
      for (auto [p, g] : llvm::zip(values, gather.getResults()))
        gathered[p] = g;
      // The run's readers' own operands (a parameter's other uses are
      // other runs' or the update's), so each reader is visited once.
      for (Operation *reader : run.readers)
        reader->walk([&](Operation *inner) {
          for (OpOperand &use : inner->getOpOperands())
            if (Value g = gathered.lookup(use.get()))
              use.set(g);
        });
    }
  }
}

struct ShardParametersPass
    : public whale::impl::WhaleShardParametersBase<ShardParametersPass> {
  void runOnOperation() override {
    OpBuilder b(&getContext());
    for (func::FuncOp fn : getOperation().getOps<func::FuncOp>()) {
      if (!fn->hasAttr("whale.rank") || fn.getBody().empty() ||
          !settingsOf(fn).getShardParameters())
        continue;
      // -whale-shard-optimizer made no broadcast under shard_parameters:
      // the owners keep the parameters, nobody is handed them.
      if (!placeOnOwners(fn))
        return signalPassFailure();
      gatherBeforeReaders(fn, b);
    }
  }
};

} // namespace
