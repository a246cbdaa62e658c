//===- Planner.cpp - from a loaded model to its rank programs -------------===//

#include "lib/compile/Planner.h"
#include "lib/compile/PassErrors.h"

#include "dialects/Whale/IR/WhaleOps.h"
#include "lib/compile/Cluster.h"
#include "lib/compile/ModelLookup.h"
#include "lowering/Passes.h"
#include "lowering/Pipelines.h"
#include "lowering/Plan.h"
#include "perfmodel/DeviceAttr.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <cstdlib>

namespace whale {
namespace {

/// When a module is verified: after each pass, once after the last, or
/// not at all.
enum class Verification { EachPass, Once, None };

/// Runs `build`'s passes on `module`, collecting their errors as
/// `file:line:col: error: message` lines, verifying it as `verification`
/// says.
bool runPasses(mlir::ModuleOp module,
               const std::function<void(mlir::PassManager &)> &build,
               std::string &error,
               Verification verification = Verification::EachPass) {
  mlir::MLIRContext *ctx = module.getContext();
  PassErrors errors(ctx);
  mlir::PassManager pm(ctx);
  pm.enableVerifier(verification == Verification::EachPass);
  // Each pass's wall time on stderr, for finding where planning goes (its
  // "Rest" includes the verification below, after the last pass).
  if (std::getenv("WHALE_PASS_TIMING"))
    pm.enableTiming();
  build(pm);
  if (mlir::succeeded(pm.run(module)) &&
      (verification != Verification::Once ||
       mlir::succeeded(mlir::verify(module))))
    return true;
  error = errors.text("planning failed");
  return false;
}

/// What the first run decides and the later runs reuse: the auto_parallel
/// cut, the replicas' shares and the shard weights. Empty for the first.
struct Decided {
  std::vector<int64_t> cut, shares, weights;
};

/// The planning pipeline with what the first run decided (nothing for the
/// first run itself, which leaves sharding out: lowering/Pipelines.cpp).
/// `weight` is the shard weight of the ranks a later run builds (0: none).
void planningPasses(mlir::PassManager &pm, int64_t devices,
                    const PlanOptions &options, const Decided &decided,
                    int64_t weight) {
  PlanningPipelineOptions planning;
  planning.devices = devices;
  planning.even = options.even;
  planning.ampStorage = options.ampStorage;
  planning.cut = llvm::ArrayRef<int64_t>(decided.cut);
  planning.localBatches = llvm::ArrayRef<int64_t>(decided.shares);
  planning.shardWeights = llvm::ArrayRef<int64_t>(decided.weights);
  planning.shardWeight = weight;
  buildWhalePlanningPipeline(pm, planning);
}

/// Tells the passes each device as the cluster describes it: its rate,
/// memory limit, kind, threads and data sheet
/// (lowering/Transforms/Parallel/ClusterView.h), from which they price its ops
/// as the simulator does.
void describeCluster(mlir::ModuleOp module, const Cluster &cluster,
                     int defaultThreads) {
  mlir::MLIRContext *ctx = module.getContext();
  llvm::SmallVector<DeviceAttr> devices;
  for (const DeviceSpec &spec : cluster.devices)
    devices.push_back(perf::deviceAttrOf(ctx, describe(spec, defaultThreads)));
  module->setAttr("whale.cluster", ClusterAttr::get(ctx, devices));
}

/// A plan's array entry as a vector; empty where the plan has none.
template <class T> std::vector<T> vectorOf(std::optional<llvm::ArrayRef<T>> a) {
  return a ? std::vector<T>(a->begin(), a->end()) : std::vector<T>();
}

/// The planned copy of `name`, alone in its module.
mlir::func::FuncOp onlyModel(mlir::ModuleOp module, const std::string &name) {
  mlir::func::FuncOp keep;
  for (auto fn :
       llvm::make_early_inc_range(module.getOps<mlir::func::FuncOp>()))
    if (fn.getName() == name)
      keep = fn;
    else
      fn.erase();
  return keep;
}

} // namespace

namespace {
/// The weight of replica r in its shard group (1: equal parts).
int64_t weightOf(const std::vector<int64_t> &weights, int64_t r) {
  return weights.empty() ? 1 : weights[r % weights.size()];
}
} // namespace

mlir::ModuleOp PlannedModel::ranksOf(int64_t replica) const {
  int64_t size =
      localBatches.empty() ? microBatch : localBatches[replica] / microBatches;
  int64_t weight = weightOf(shardWeights, replica);
  for (const RankVariant &v : others)
    if (v.microBatch == size && v.shardWeight == weight)
      return *v.ranks;
  return *ranks;
}

bool planModel(Interpreter &interp, const std::string &modelName,
               const Cluster &cluster, const PlanOptions &options,
               PlannedModel &out, std::string &error) {
  mlir::func::FuncOp model =
      findModel(interp, modelName, /*needsTrainBlock=*/true, error);
  if (!model)
    return false;
  out.model = model.getName().str();
  const int64_t devices = static_cast<int64_t>(cluster.devices.size());
  out.devices = devices;
  out.deviceFlops = deviceRates(cluster, options.defaultThreads);
  for (int64_t d = 0; d < devices; ++d)
    if (perf::rateIsNominal(
            describe(cluster.devices[d], options.defaultThreads)))
      out.nominalRates.push_back(d);

  // Plans `module` (a copy of the script at some batch) with the same
  // shares as the first run once those are known.
  Decided decided;
  auto planCopy = [&](mlir::ModuleOp module, int64_t weight) {
    onlyModel(module, out.model);
    describeCluster(module, cluster, options.defaultThreads);
    return runPasses(
        module,
        [&](mlir::PassManager &pm) {
          planningPasses(pm, devices, options, decided, weight);
        },
        error);
  };
  // Builds the rank programs of a planned copy, their elementwise chains
  // fused: the CPUs run the generated kernels, GPUs the regions' element
  // programs, which hold fewer kinds of region. The programs unroll every
  // micro-batch (millions of ops in a large pipeline), so they are
  // verified once, at the end: verifying after each of these passes took
  // 13 of the 30 s that planning Megatron-LM's 1T run of 512 micro-batches
  // took. The passes' own lit tests verify each of them. (`whale search`
  // and `whale sim` do not verify them at all: PlanOptions::verify.)
  const bool elementPrograms =
      llvm::any_of(cluster.devices, [](const DeviceSpec &d) { return d.gpu; });
  auto rankPrograms = [&](mlir::ModuleOp planned,
                          mlir::OwningOpRef<mlir::ModuleOp> &ranks) {
    ranks = planned.clone();
    return runPasses(
        *ranks,
        [&](mlir::PassManager &pm) {
          RankProgramsPipelineOptions tail;
          tail.overlap = options.overlap;
          tail.fuse = options.fuse;
          tail.elementPrograms = elementPrograms;
          tail.gemmEpilogues = options.gemmEpilogues.value_or(elementPrograms);
          tail.ampStorage = options.ampStorage;
          buildWhaleRankProgramsPipeline(pm, tail);
        },
        error, options.verify ? Verification::Once : Verification::None);
  };

  // First at the global batch: replicas, micro-batches and their shares.
  mlir::OwningOpRef<mlir::ModuleOp> global = interp.module().clone();
  if (!planCopy(*global, 0))
    return false;
  auto fn = global->lookupSymbol<mlir::func::FuncOp>(out.model);
  ModelPlan plan = ModelPlan::of(fn);
  out.microBatch = plan.microBatch().value_or(0);
  out.microBatches = plan.microBatches().value_or(1);
  decided.shares = vectorOf(plan.localBatches());
  decided.weights = vectorOf(plan.shardWeights());
  if (auto cut = fn->getAttrOfType<mlir::DenseI64ArrayAttr>("whale.cut"))
    decided.cut.assign(cut.asArrayRef().begin(), cut.asArrayRef().end());
  const std::vector<int64_t> &shares = decided.shares,
                             &weights = decided.weights;
  // The later runs reuse these shares; what the balance decided and
  // predicted is this run's.
  out.deviceMemory = vectorOf(plan.deviceMemory());
  out.deviceActivations = vectorOf(plan.deviceActivations());
  out.deviceSeconds = vectorOf(plan.deviceSeconds());
  if (std::optional<BalanceKind> b = plan.balance())
    out.balance = stringifyBalanceKind(*b).str();

  // Then at each micro-batch size: the shapes each rank computes with.
  auto elaborate = [&](int64_t size) -> std::unique_ptr<Interpreter> {
    std::unique_ptr<Interpreter> at = interp.atBatch(size);
    if (!at || !at->module()) {
      error = "elaborating the model at its micro-batch of " +
              std::to_string(size) + " failed" +
              (at ? ":\n" + at->renderDiagnostics() : "");
      return nullptr;
    }
    return at;
  };
  out.micro = elaborate(out.microBatch);
  if (!out.micro)
    return false;
  out.planned = out.micro->module().clone();
  const int64_t firstWeight = weightOf(weights, 0);
  if (!planCopy(*out.planned, weights.empty() ? 0 : firstWeight))
    return false;
  if (options.beforeRankPrograms &&
      !options.beforeRankPrograms(
          out.planned->lookupSymbol<mlir::func::FuncOp>(out.model), error))
    return false;
  if (!rankPrograms(*out.planned, out.ranks))
    return false;
  for (auto [r, share] : llvm::enumerate(shares)) {
    int64_t size = share / out.microBatches,
            weight = weightOf(weights, static_cast<int64_t>(r));
    auto same = [&](const RankVariant &v) {
      return v.microBatch == size && v.shardWeight == weight;
    };
    if ((size == out.microBatch && weight == firstWeight) ||
        llvm::any_of(out.others, same))
      continue;
    RankVariant v;
    v.microBatch = size;
    v.shardWeight = weight;
    v.micro = elaborate(size);
    if (!v.micro)
      return false;
    mlir::OwningOpRef<mlir::ModuleOp> planned = v.micro->module().clone();
    if (!planCopy(*planned, weights.empty() ? 0 : weight) ||
        !rankPrograms(*planned, v.ranks))
      return false;
    out.others.push_back(std::move(v));
  }

  fn = out.planned->lookupSymbol<mlir::func::FuncOp>(out.model);
  plan = ModelPlan::of(fn);
  out.stages = plan.stages().value_or(1);
  out.replicas = plan.replicas().value_or(1);
  out.globalBatch = plan.globalBatch().value_or(0);
  out.schedule = stringifyPipelineSchedule(
                     plan.schedule().value_or(PipelineSchedule::one_f_one_b))
                     .str();
  out.chunks = plan.chunks().value_or(1);
  out.grid = vectorOf(plan.grid());
  out.localBatches = vectorOf(plan.localBatches());
  out.rowGroup = plan.rowGroupOrOne();
  out.shardWeights = weights;
  return true;
}

} // namespace whale
