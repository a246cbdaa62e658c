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
// Or each unit is gathered once a step, before its first reader, and kept
// to its last (the config's `gather_every = "step"`; FSDP's parameters not
// resharded after the forward, and kept through accumulation): a gather a
// unit a step instead of two a micro-batch, for every layer's parameters
// held at once. Unset, a stage keeps them where each of its devices
// declares a memory limit that holds them beside the plan's estimate (the
// balancer counted two gathered units), and gathers every micro-batch
// otherwise; the rank program says which (`whale.gather_every`).
//
// Under amp a gathered parameter that only matrix products read (amp
// rounds their operands to bf16) or a cast to bf16 reads travels as bf16
// (`bf16` on its gather): half the bytes, the same bits for its readers.
// Between hosts only: where a stage's devices are GPUs their own
// collectives gather (in f32), and nothing is marked.
//
// Where the config does not set gather_layers, the plan chooses k: the
// fewest layers whose gather spends at most a tenth of its time on the
// link's latency (a ring all-gather of U bytes over n members takes
// (n - 1) latency + (n - 1) / n U / bandwidth: U >= 10 n latency
// bandwidth, a unit of k mean layers), as far as declared memory allows
// the larger units beside the plan's estimate (the balancer counted two
// single layers), on links the device model knows (GPUs' NVLink); one
// layer elsewhere. The rank program says which (`whale.gather_layers`).
//
// Runs on rank programs after -whale-shard-optimizer, which gave the
// owners (and, under shard_parameters, no broadcast after the updates).
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"
#include "lowering/Plan.h"
#include "lowering/Transforms/Parallel/ClusterView.h"
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

/// Whether every reader of gathered `v` rounds it to bf16 to nearest, ties
/// to even, as the gather would: amp's matrix products (under amp =
/// "bf16" every product rounds its operands), or (bf16 storage) casts to
/// bf16 that only products read. A cast other ops read may be folded away
/// with their widening (-whale-widen-bf16), leaving them the f32 value.
bool readRoundedToBf16(Value v, bool amp) {
  auto product = [](Operation *op) { return isa<MatmulOp, MatmulGradOp>(op); };
  return amp && !v.use_empty() &&
         llvm::all_of(v.getUsers(), [&](Operation *user) {
           if (auto cast = dyn_cast<CastOp>(user))
             return cast.getType().getElementType().isBF16() &&
                    !cast->use_empty() &&
                    llvm::all_of(cast->getUsers(), product);
           return product(user);
         });
}

/// One gathering: the parameters of a unit that ops read in a row.
struct Run {
  SmallVector<Operation *> readers; ///< top-level ops, in order
  llvm::SetVector<Operation *> params;
};

/// The devices of `fn`'s stage (its replicas' places in the plan's grid);
/// empty where the rank program does not say.
SmallVector<int64_t> stageDevices(func::FuncOp fn) {
  SmallVector<int64_t> devices;
  auto rank = fn->getAttrOfType<DictionaryAttr>("whale.rank");
  auto grid = rank ? rank.getAs<DenseI64ArrayAttr>("grid") : nullptr;
  if (!grid)
    return devices;
  const int64_t stage = plan::intOf(rank, "stage", 0);
  const int64_t replicas = plan::intOf(rank, "replicas", 1);
  for (int64_t r = 0; r < replicas; ++r)
    if (stage * replicas + r < grid.size())
      devices.push_back(grid[stage * replicas + r]);
  return devices;
}

/// Bytes of each layer's owned parameters (a unit of one layer), largest
/// first.
SmallVector<int64_t> ownedLayerBytes(func::FuncOp fn) {
  llvm::StringMap<int64_t> byLayer;
  fn.walk([&](ParamOp p) {
    if (p.getOwner())
      byLayer[plan::gatherUnitOf(p.getName())] += tensorBytes(p.getType());
  });
  SmallVector<int64_t> sizes;
  for (const auto &layer : byLayer)
    sizes.push_back(layer.getValue());
  llvm::sort(sizes, std::greater<int64_t>());
  return sizes;
}

/// Whether `fn` gathers each unit once a step: as the config says, else
/// where every device of its stage has a declared limit with room for all
/// its owned parameters (`layers`, ownedLayerBytes) gathered besides the
/// plan's estimate, which counted kGatheredUnitsHeld of its largest units.
bool gathersOncePerStep(func::FuncOp fn, ArrayRef<int64_t> layers) {
  if (std::optional<GatherEvery> every = settingsOf(fn).getGatherEvery())
    return *every == GatherEvery::step;
  auto rank = fn->getAttrOfType<DictionaryAttr>("whale.rank");
  auto memory = rank ? rank.getAs<DenseI64ArrayAttr>("device_memory") : nullptr;
  const SmallVector<int64_t> devices = stageDevices(fn);
  if (!memory || devices.empty())
    return false;
  int64_t all = 0;
  for (int64_t bytes : layers)
    all += bytes;
  const int64_t largest = layers.empty() ? 0 : layers.front();
  const int64_t extra = std::max<int64_t>(
      0, all - static_cast<int64_t>(plan::kGatheredUnitsHeld * largest));
  const plan::ClusterView cluster =
      plan::clusterOf(fn, static_cast<int64_t>(memory.size()));
  return llvm::all_of(devices, [&](int64_t d) {
    return d < memory.size() && cluster.limit(d) > 0 &&
           memory[d] + extra <= cluster.limit(d);
  });
}

/// Whether every device of `fn`'s stage gathers through the host (none is
/// a GPU, whose own collectives gather in f32).
bool gathersThroughHosts(func::FuncOp fn) {
  const SmallVector<int64_t> devices = stageDevices(fn);
  if (devices.empty())
    return true;
  const plan::ClusterView cluster =
      plan::clusterOf(fn, *llvm::max_element(devices) + 1);
  return llvm::none_of(devices,
                       [&](int64_t d) { return cluster.device(d).gpu; });
}

/// The layers gathered as one unit: the config's gather_layers, else the
/// fewest layers whose gather is bandwidth-bound on the stage's link
/// (latency at most a tenth of it), within declared memory. `sizes`: the
/// layers' bytes, largest first (ownedLayerBytes).
int64_t layersAUnit(func::FuncOp fn, ArrayRef<int64_t> sizes) {
  if (settingsOf(fn).getGatherLayers() > 0)
    return settingsOf(fn).getGatherLayers();
  auto rank = fn->getAttrOfType<DictionaryAttr>("whale.rank");
  auto memory = rank ? rank.getAs<DenseI64ArrayAttr>("device_memory") : nullptr;
  const SmallVector<int64_t> devices = stageDevices(fn);
  if (!memory || devices.empty())
    return 1;
  const plan::ClusterView cluster =
      plan::clusterOf(fn, static_cast<int64_t>(memory.size()));
  // The slowest link of the stage's devices.
  double latency = 0, bandwidth = 0;
  for (int64_t d : devices) {
    const perf::DeviceModel model = cluster.deviceModel(d);
    latency = std::max(latency, model.nodeLinkLatency);
    bandwidth = bandwidth == 0 ? model.nodeLinkBandwidth
                               : std::min(bandwidth, model.nodeLinkBandwidth);
  }
  if (latency <= 0 || bandwidth <= 0)
    return 1;
  if (sizes.empty())
    return 1;
  int64_t total = 0;
  for (int64_t bytes : sizes)
    total += bytes;
  // The gather's group: a sharding group, else the stage's replicas (at
  // most: a split parameter's peers are fewer).
  const int64_t sharding = settingsOf(fn).shardingGroup();
  const double members =
      double(sharding > 0 ? std::min<int64_t>(sharding, devices.size())
                          : static_cast<int64_t>(devices.size()));
  const double wanted = 10 * members * latency * bandwidth;
  const double mean = double(total) / double(sizes.size());
  int64_t k = std::clamp<int64_t>(
      static_cast<int64_t>(std::ceil(wanted / mean)), 1, sizes.size());
  // Larger units hold more gathered at once: the k largest layers twice,
  // where the plan counted the largest twice.
  auto fits = [&](int64_t k) {
    int64_t unit = 0;
    for (int64_t i = 0; i < k; ++i)
      unit += sizes[i];
    const double extra = plan::kGatheredUnitsHeld * double(unit - sizes[0]);
    return llvm::all_of(devices, [&](int64_t d) {
      return cluster.limit(d) <= 0 ||
             (d < memory.size() && memory[d] + extra <= cluster.limit(d));
    });
  };
  while (k > 1 && !fits(k))
    --k;
  return k;
}

void gatherBeforeReaders(func::FuncOp fn, OpBuilder &b, bool oncePerStep,
                         int64_t k) {
  Block &body = fn.getBody().front();
  const bool amp = settingsOf(fn).bf16();
  const bool halves = gathersThroughHosts(fn);
  // Each layer's unit under `gather_layers = k`: the layers in the order
  // the walk below first reads them, k at a time (a unit is named after
  // its first layer).
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
      // Once a step: every reader of the unit in one run.
      auto it = open.find(unit);
      if (it == open.end() ||
          (!oncePerStep && !llvm::is_contained(lastUnits, unit))) {
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
      SmallVector<bool> bf16;
      for (Value g : gather.getResults())
        bf16.push_back(halves && readRoundedToBf16(g, amp));
      if (llvm::is_contained(bf16, true))
        gather.setBf16Attr(b.getDenseBoolArrayAttr(bf16));
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
      const SmallVector<int64_t> layers = ownedLayerBytes(fn);
      const bool oncePerStep = gathersOncePerStep(fn, layers);
      fn->setAttr("whale.gather_every",
                  b.getStringAttr(oncePerStep ? "step" : "micro_batch"));
      const int64_t k = layersAUnit(fn, layers);
      fn->setAttr("whale.gather_layers", b.getI64IntegerAttr(k));
      gatherBeforeReaders(fn, b, oncePerStep, k);
    }
  }
};

} // namespace
