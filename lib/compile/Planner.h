//===- Planner.h - from a loaded model to its rank programs -------*- C++
//-*-===//
//
// Runs the planning passes over a model for a number of devices, elaborates
// the script again at the plan's micro-batch (the static shapes one rank
// sees), and builds one rank program per pipeline stage. What `whale
// compile --emit=planned|ranks`, `whale plan` and `whale run --cluster` use.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_COMPILE_PLANNER_H
#define WHALE_LIB_COMPILE_PLANNER_H

#include "whale/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace whale {

struct Cluster;

/// How to plan besides the devices themselves.
struct PlanOptions {
  /// Equal local batches whatever the devices (`whale plan` shows both).
  bool even = false;
  /// Threads of a device that declares none (the run's --threads shared).
  int defaultThreads = 1;
  /// Chains of elementwise ops as fused regions (-whale-fuse-elementwise):
  /// kernels the JIT generates on CPUs, element programs on GPUs.
  bool fuse = true;
  /// Gradient all-reduces started during backward, waited for at their
  /// readers (-whale-overlap-grad-sync).
  bool overlap = true;
  /// amp's storage (-whale-amp-storage before the cut, -whale-widen-bf16
  /// after the rank programs), as a one-device run's TrainOptions has it.
  bool ampStorage = false;
  /// Linear layers as GEMMs with epilogues (-whale-gemm-epilogues): on by
  /// default where a device is a GPU, whose cuBLASLt applies them; true
  /// runs them on CPUs too (their composition: equivalence tests).
  std::optional<bool> gemmEpilogues;
  /// Verify the rank programs once built (the planning passes before them
  /// are verified after each pass either way). `whale search` and `whale
  /// sim` only simulate the plans they make: verifying the unrolled
  /// programs took a third of planning one of the search's candidates (the
  /// 18.4B model's pipelines of 128 micro-batches) and a fifth of
  /// simulating Megatron-LM's 1T plan; whatever runs a plan plans it
  /// again, and verifies it.
  bool verify = true;
  /// Told the planned model (cut, elaborated at its micro-batch) before its
  /// rank programs are built, which unroll every micro-batch and are most
  /// of planning a large pipeline; false stops planning there, planModel
  /// returning false with the error this sets. The search sets aside
  /// candidates whose cut cannot beat the plans it has found.
  std::function<bool(mlir::func::FuncOp planned, std::string &error)>
      beforeRankPrograms;
};

/// The rank programs of replicas whose micro-batch differs from replica
/// 0's (unequal local batches), or whose weight in an uneven shard group
/// does: the script elaborated at that size, sharded for that weight.
struct RankVariant {
  int64_t microBatch = 0, shardWeight = 1;
  std::unique_ptr<Interpreter> micro;
  mlir::OwningOpRef<mlir::ModuleOp> ranks;
};

struct PlannedModel {
  std::string model;
  /// The script at replica 0's micro-batch; owns the context of both modules.
  std::unique_ptr<Interpreter> micro;
  /// The model with its TaskGraphs, virtual devices, schedule and buckets.
  mlir::OwningOpRef<mlir::ModuleOp> planned;
  /// One function per stage (`<model>_stage<s>`), whale dialect, for the
  /// replicas at replica 0's micro-batch.
  mlir::OwningOpRef<mlir::ModuleOp> ranks;
  /// The same for each other micro-batch size (and shard weight).
  std::vector<RankVariant> others;

  int64_t devices = 1, stages = 1, replicas = 1;
  int64_t globalBatch = 0, microBatches = 1, microBatch = 0;
  std::string schedule;
  /// Model chunks each stage holds (virtual_stages): above 1 the schedule
  /// interleaves them.
  int64_t chunks = 1;
  /// grid[s * replicas + r]: the device of stage s, replica r.
  std::vector<int64_t> grid;
  /// Samples of the global batch per replica (a copy of the model), in
  /// order: replica r takes the rows after those of replicas before it.
  std::vector<int64_t> localBatches;
  /// Consecutive replicas that read the same rows (split_rows = "whole":
  /// a shard group's size; runtime/run/BatchRows.h), else 1.
  int64_t rowGroup = 1;
  /// Uneven shards: the weight of each position in a shard group (empty:
  /// equal parts).
  std::vector<int64_t> shardWeights;
  /// Per device, as the balance pass predicts: peak bytes and compute
  /// seconds per step; and the rate it planned with (FLOP/s).
  std::vector<int64_t> deviceMemory;
  /// Of deviceMemory, the activations (the rest is parameters, gradients
  /// and optimizer state).
  std::vector<int64_t> deviceActivations;
  std::vector<double> deviceSeconds, deviceFlops;
  /// The devices whose rate is nominal: the cluster declares none, no data
  /// sheet gives one, and none was measured (`whale devices --probe`).
  std::vector<int64_t> nominalRates;
  std::string balance;

  /// The rank programs replica r runs.
  mlir::ModuleOp ranksOf(int64_t replica) const;
  /// The rows of the global batch each replica reads, in replica order.
  std::vector<int64_t> replicaRows() const {
    if (!localBatches.empty())
      return localBatches;
    return std::vector<int64_t>(static_cast<size_t>(replicas),
                                microBatch * microBatches);
  }
};

/// Plans the model `modelName` (empty: the first with a train block) of
/// the loaded program over `cluster`. On failure returns false with the
/// planner's messages (file:line:col: error: ...).
bool planModel(Interpreter &interp, const std::string &modelName,
               const Cluster &cluster, const PlanOptions &options,
               PlannedModel &out, std::string &error);

} // namespace whale

#endif
