//===- Pipelines.h - the named pass pipelines Whale runs --------*- C++ -*-===//
//
// A pipeline of passes has a name and is registered, so that whale-opt runs
// exactly what `whale run` and `whale compile` run (STYLE.md, habit 13):
//
//   -whale-grad-pipeline      attention fused, then the gradient function
//                             (`whale compile --emit=grad`);
//   -whale-train-pipeline     and the train step, its elementwise ops fused
//                             unless fuse=false (`--emit=train`, the step a
//                             one-device run compiles);
//   -whale-runtime-pipeline   and lowered to the runtime's calls
//                             (`--emit=runtime`);
//   -whale-planning-pipeline  a model planned on a cluster: attention
//                             fused, cut into TaskGraphs, placed on virtual
//                             devices, cut into micro-batches, balanced,
//                             gradient sums bucketed, and (with the shares
//                             of a first run) split TaskGraphs sharded;
//                             what lib/compile/Planner.cpp runs, with the
//                             options it computes from the cluster and
//                             from that first run (`--emit=planned`);
//   -whale-rank-programs-pipeline
//                             a planned module's rank programs, their
//                             optimizer state sharded, gradient sums
//                             overlapped and elementwise ops fused
//                             (`--emit=ranks` from `--emit=planned`).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_PIPELINES_H
#define WHALE_LOWERING_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace whale {

struct TrainPipelineOptions
    : public mlir::PassPipelineOptions<TrainPipelineOptions> {
  Option<bool> fuse{*this, "fuse",
                    llvm::cl::desc("fuse the train step's elementwise ops "
                                   "into generated kernels"),
                    llvm::cl::init(true)};
  Option<bool> ampStorage{
      *this, "amp-storage",
      llvm::cl::desc("activations in bf16, parameters fp32 masters "
                     "(-whale-amp-storage), every op in fp32 between casts "
                     "until it has a bf16 kernel (-whale-widen-bf16)"),
      llvm::cl::init(false)};
};

struct RankProgramsPipelineOptions
    : public mlir::PassPipelineOptions<RankProgramsPipelineOptions> {
  Option<bool> overlap{*this, "overlap",
                       llvm::cl::desc("start each gradient all-reduce as "
                                      "soon as its bucket is final"),
                       llvm::cl::init(true)};
  Option<bool> fuse{*this, "fuse",
                    llvm::cl::desc("fuse elementwise ops into generated "
                                   "kernels"),
                    llvm::cl::init(true)};
  Option<bool> elementPrograms{
      *this, "element-programs",
      llvm::cl::desc("fuse only the regions an element program runs (plans "
                     "on GPUs)"),
      llvm::cl::init(false)};
  Option<bool> gemmEpilogues{
      *this, "gemm-epilogues",
      llvm::cl::desc("linear layers as GEMMs with bias and GELU epilogues, "
                     "and under amp-storage gradients rounded with their "
                     "bias sums (-whale-gemm-epilogues, "
                     "-whale-fuse-rounded-sums; plans on GPUs)"),
      llvm::cl::init(false)};
  Option<bool> ampStorage{
      *this, "amp-storage",
      llvm::cl::desc("the planned model's activations are bf16 "
                     "(planning's amp-storage): widen each op without a "
                     "bf16 kernel (-whale-widen-bf16)"),
      llvm::cl::init(false)};
};

struct PlanningPipelineOptions
    : public mlir::PassPipelineOptions<PlanningPipelineOptions> {
  Option<int64_t> devices{*this, "devices",
                          llvm::cl::desc("the ranks of the cluster"),
                          llvm::cl::init(1)};
  Option<bool> even{*this, "even",
                    llvm::cl::desc("equal shares whatever the devices"),
                    llvm::cl::init(false)};
  ListOption<int64_t> cut{
      *this, "cut",
      llvm::cl::desc("where an earlier run cut the model into TaskGraphs "
                     "(op counts): keep it")};
  ListOption<int64_t> localBatches{
      *this, "local-batches",
      llvm::cl::desc("each replica's share of the batch, from an earlier "
                     "run; given, the split TaskGraphs are sharded")};
  ListOption<int64_t> shardWeights{
      *this, "shard-weights",
      llvm::cl::desc("uneven shard groups' weights, from an earlier run")};
  Option<int64_t> shardWeight{
      *this, "shard-weight",
      llvm::cl::desc("the weight this copy of the model is elaborated at"),
      llvm::cl::init(0)};
  Option<bool> ampStorage{
      *this, "amp-storage",
      llvm::cl::desc("activations in bf16, parameters fp32 masters "
                     "(-whale-amp-storage), before the model is cut"),
      llvm::cl::init(false)};
};

/// Attention fused, then (under `ampStorage`) activations made bf16, then
/// the model's gradient function.
void buildWhaleGradPipeline(mlir::OpPassManager &pm, bool ampStorage = false);
/// The gradient function's pipeline, then the train step (optimizer
/// updates), each op without a bf16 kernel widened under
/// `options.ampStorage`, fused unless `options.fuse` is false.
void buildWhaleTrainPipeline(mlir::OpPassManager &pm,
                             const TrainPipelineOptions &options);
/// The train pipeline, then the lowering to the runtime's calls.
void buildWhaleRuntimePipeline(mlir::OpPassManager &pm,
                               const TrainPipelineOptions &options);

/// A model planned on a cluster (lib/compile/Planner.cpp runs it).
void buildWhalePlanningPipeline(mlir::OpPassManager &pm,
                                const PlanningPipelineOptions &options);

/// A planned module's rank programs (lib/compile/Planner.cpp runs it).
void buildWhaleRankProgramsPipeline(mlir::OpPassManager &pm,
                                    const RankProgramsPipelineOptions &options);

/// Registers the pipelines above by name (for whale-opt).
void registerWhalePipelines();

} // namespace whale

#endif
