//===- StateCollection.cpp - a plan's training state as boxes -------------===//

#include "lib/elastic/StateCollection.h"

#include "dialects/Whale/IR/TrainAttrs.h"
#include "dialects/Whale/IR/WhaleOps.h"
#include "lib/compile/Cluster.h"
#include "lib/compile/Planner.h"
#include "lib/compile/StageSignature.h"
#include "runtime/core/Parts.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>

namespace whale {

std::vector<RankPlace> devicePlaces(const Cluster &cluster) {
  std::vector<RankPlace> out;
  std::map<std::pair<int, std::string>, int> seen;
  for (const DeviceSpec &d : cluster.devices) {
    std::string node = d.node >= 0 && size_t(d.node) < cluster.nodes.size()
                           ? cluster.nodes[d.node]
                           : "node" + std::to_string(d.node);
    int index = seen[{d.node, d.kind}]++;
    out.push_back({node + "/" + d.kind + ":" + std::to_string(index), node});
  }
  return out;
}

bool stateOf(const PlannedModel &plan, const Cluster &cluster,
             StateCollection &out, std::string &error) {
  out = StateCollection();
  out.model = plan.model;
  std::vector<RankPlace> devices = devicePlaces(cluster);
  // Rank s * replicas + r: stage s, replica r, on the grid's device.
  for (int64_t s = 0; s < plan.stages; ++s)
    for (int64_t r = 0; r < plan.replicas; ++r) {
      int64_t d = plan.grid.empty() ? r : plan.grid[s * plan.replicas + r];
      if (d < 0 || size_t(d) >= devices.size()) {
        error = "the plan places a rank on device " + std::to_string(d) +
                ", which the cluster does not have";
        return false;
      }
      out.ranks.push_back(devices[d]);
    }
  // The optimizer's tensors per parameter, from the model's train block.
  int states = 0;
  if (auto model =
          plan.planned.get().lookupSymbol<mlir::func::FuncOp>(plan.model))
    if (auto train = model->getAttrOfType<mlir::DictionaryAttr>("whale.train"))
      states =
          optimizerStateCount(train.getAs<mlir::DictionaryAttr>("optimizer"));
  std::map<std::string, size_t> at; // tensor name -> index
  auto tensor = [&](const std::string &name,
                    const std::vector<int64_t> &shape,
                    int64_t bytes) -> StateTensor & {
    auto [it, fresh] = at.try_emplace(name, out.tensors.size());
    if (fresh)
      out.tensors.push_back({name, shape, bytes, {}});
    return out.tensors[it->second];
  };
  for (int64_t s = 0; s < plan.stages; ++s)
    for (int64_t r = 0; r < plan.replicas; ++r) {
      const int64_t rank = s * plan.replicas + r;
      mlir::ModuleOp module = plan.ranksOf(r);
      auto fn = module.lookupSymbol<mlir::func::FuncOp>(
          plan.model + "_stage" + std::to_string(s));
      if (!fn) {
        error = "no rank program for stage " + std::to_string(s);
        return false;
      }
      // Optimizer state sharded over a group (shard_optimizer): a
      // parameter's state lives on its owner alone.
      const llvm::StringMap<Parameter> owners = stateOwners(fn);
      auto holdsState = [&](llvm::StringRef name) {
        auto it = owners.find(name);
        return it == owners.end() || it->second.holdsState(r);
      };
      bool ok = true;
      fn.walk([&](ParamOp p) {
        mlir::RankedTensorType full = p.getFullType();
        std::vector<int64_t> shape(full.getShape());
        Box box = wholeBox(shape);
        if (std::optional<llvm::ArrayRef<int64_t>> shard = p.getShard()) {
          int64_t axis = (*shard)[0], shards = (*shard)[1];
          std::vector<int64_t> weights;
          if (auto w = p.getShardWeights())
            weights.assign(w->begin(), w->end());
          rt::PartRange part;
          if (!rt::partOf(shape[axis], shards,
                          weights.empty() ? nullptr : weights.data(),
                          r % shards, part)) {
            error = "parameter '" + p.getName().str() +
                    "' cannot be cut into its shard group's parts";
            ok = false;
            return;
          }
          box.offset[axis] = part.offset;
          box.size[axis] = part.size;
        }
        int64_t bytes = full.getElementTypeBitWidth() / 8;
        tensor(p.getName().str(), shape, bytes).holders.push_back({rank, box});
        for (int k = 0; k < (holdsState(p.getName()) ? states : 0); ++k)
          tensor(p.getName().str() + ".optimizer_" + std::to_string(k), shape,
                 bytes)
              .holders.push_back({rank, box});
      });
      if (!ok)
        return false;
      // What every rank keeps besides: the step (the data position and the
      // learning-rate schedule follow from it) and the seed.
      for (const char *scalar : {"step", "seed"})
        tensor(scalar, {}, 8).holders.push_back({rank, Box{}});
    }
  return true;
}

} // namespace whale
