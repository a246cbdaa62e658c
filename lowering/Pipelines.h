//===- Pipelines.h - the named pass pipelines Whale runs ---------*- C++ -*-===//
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
//   -whale-rank-programs-pipeline
//                             a planned module's rank programs, their
//                             optimizer state sharded, gradient sums
//                             overlapped and elementwise ops fused
//                             (`--emit=ranks` from `--emit=planned`).
//
// The planning passes (partition, virtual devices, pipeline, balance,
// data parallelism, sharding) still take options lib/compile/Planner.cpp builds
// from the cluster and from a first planning run; they are not named here
// yet.
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
};

/// Attention fused, then the model's gradient function.
void buildWhaleGradPipeline(mlir::OpPassManager &pm);
/// The gradient function's pipeline, then the train step (optimizer
/// updates), fused unless `options.fuse` is false.
void buildWhaleTrainPipeline(mlir::OpPassManager &pm,
                             const TrainPipelineOptions &options);
/// The train pipeline, then the lowering to the runtime's calls.
void buildWhaleRuntimePipeline(mlir::OpPassManager &pm,
                               const TrainPipelineOptions &options);

/// A planned module's rank programs (lib/compile/Planner.cpp runs it).
void buildWhaleRankProgramsPipeline(mlir::OpPassManager &pm,
                                    const RankProgramsPipelineOptions &options);

/// Registers the pipelines above by name (for whale-opt).
void registerWhalePipelines();

} // namespace whale

#endif
