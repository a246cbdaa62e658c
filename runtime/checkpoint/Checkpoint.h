//===- Checkpoint.h - a model's state to and from safetensors -*- C++ -*-===//
//
// Parameters by name, optimizer state beside them as NAME.optimizer_K, the
// model's name, the next step and the seed in the metadata (the data
// position follows from the step and the seed). A path ending in
// `.safetensors` is the file; any other names a folder holding
// `checkpoint.safetensors`.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CHECKPOINT_CHECKPOINT_H
#define WHALE_RUNTIME_CHECKPOINT_CHECKPOINT_H

#include "runtime/WhaleRuntime.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace whale {

inline constexpr const char *kCheckpointFileName = "checkpoint.safetensors";

/// Whether a checkpoint path names one file (it ends in `.safetensors` or
/// is an existing file) rather than a folder.
bool isSingleFilePath(const std::string &path);

/// "" when `--save PATH` may be written, checked before a run trains: a
/// file into a folder that exists, or a folder it may replace whole (a
/// checkpoint folder never holds anything else); else the error, "--save:
/// ...".
std::string checkSaveDestination(const std::string &path);

/// The file a checkpoint path names: a path ending in `.safetensors`, or an
/// existing file, is the file itself; anything else is a folder holding
/// `checkpoint.safetensors` (made when `saving`). "" with `error` when the
/// folder cannot be made.
std::string checkpointFile(const std::string &path, bool saving,
                           std::string &error);

struct Parameter {
  std::string name;
  std::vector<int64_t> shape; ///< the whole parameter's
  /// Split over a shard group: each rank holds part (replica % shards) of
  /// `shards` along `axis`, equal or proportional to `weights`
  /// (runtime/core/Parts.h).
  int64_t axis = -1, shards = 1;
  std::vector<int64_t> weights;
  /// Optimizer state sharded over the ranks that sum the gradient
  /// (shard_optimizer): the state lives on the rank at position
  /// `stateOwner` of its group (the stage's replicas, or with
  /// `ownerShards` > 0 the replicas holding the same part: replica /
  /// ownerShards); -1: on every rank.
  int64_t stateOwner = -1, ownerShards = 0;
  /// Hybrid sharding (shard_group): the group is cut into sharding groups
  /// of `sharding` consecutive members, `stateOwner` is a position in each,
  /// and every sharding group's owner holds a copy; 0: not cut.
  int64_t sharding = 0;
  /// Parameters sharded over that group too (shard_parameters, ZeRO stage
  /// 3): the parameter itself lives with its state, on the owner alone.
  bool valueOwned = false;
  /// Whether replica `replica` of the stage holds this parameter's state.
  bool holdsState(int64_t replica) const {
    if (stateOwner < 0)
      return true;
    const int64_t at = ownerShards > 0 ? replica / ownerShards : replica;
    return (sharding > 0 ? at % sharding : at) == stateOwner;
  }
  /// Whether replica `replica` of the stage holds the parameter itself.
  bool holdsValue(int64_t replica) const {
    return !valueOwned || holdsState(replica);
  }
};

/// The next step and the seed a checkpoint's metadata record, checked:
/// plain decimal numbers, the step at most kMaxSteps; "" when they are,
/// else what is wrong with `file`.
std::string checkpointPosition(const std::map<std::string, std::string> &meta,
                               const std::string &file, int64_t &step,
                               uint64_t &seed);

/// "" when a run of `steps` steps can resume at `nextStep`, else why not.
std::string checkResumable(const std::string &path, int64_t nextStep,
                           int64_t steps);

/// Writes the parameters (and `stateCount` optimizer tensors each) of
/// `ctx`; "" on success, else what went wrong.
std::string saveCheckpoint(whale_rt_context *ctx, const std::string &path,
                           const std::string &model, int64_t nextStep,
                           uint64_t seed, const std::vector<Parameter> &params,
                           int stateCount);

/// Fills the parameters (and optimizer state) of `ctx` from `path`, after
/// checking it is `model`'s with the same shapes; sets `nextStep`.
std::string loadCheckpoint(whale_rt_context *ctx, const std::string &path,
                           const std::string &model,
                           const std::vector<Parameter> &params, int stateCount,
                           int64_t &nextStep);

/// Copies each parameter's values out of `ctx`, by name.
std::string readParameters(whale_rt_context *ctx,
                           const std::vector<Parameter> &params,
                           std::map<std::string, std::vector<float>> &out);

/// Copies `count` values (all of the parameter's) into `p`'s tensor in
/// `ctx` (a whole parameter's context: one device, or a plan's host).
std::string writeParameter(whale_rt_context *ctx, const Parameter &p,
                           const float *values, int64_t count);

/// Where part `part` of parameter `p` lies in the whole, in bytes:
/// `outer` runs of `block` bytes, `stride` apart, from `offset`; and the
/// part's shape. The whole parameter for an unsharded one.
struct PartRuns {
  int64_t outer = 1, block = 0, stride = 0, offset = 0;
  std::vector<int64_t> localShape;
};
std::string partRuns(const Parameter &p, int64_t part, PartRuns &out);

/// Copies parameters and their `stateCount` optimizer states between
/// `whole` (every parameter whole: the host, a checkpoint) and `rank`,
/// which holds part `part` of the sharded ones: into the rank when
/// `toRank` (handing a loaded checkpoint out), else out of it (gathering).
/// The rank is replica `replica` of its stage; `values`: the parameters
/// themselves move (else only state). A parameter's state moves where
/// `values` does, or, sharded over a group (Parameter::stateOwner), to and
/// from its owner alone; a parameter sharded so (Parameter::valueOwned)
/// moves with its state.
std::string copyShardState(whale_rt_context *whole, whale_rt_context *rank,
                           const std::vector<Parameter> &params, int stateCount,
                           int64_t part, bool toRank, int64_t replica,
                           bool values);

/// The tensor of a rank's own copy of parameter `name` (at its part's
/// `localShape`), or of its optimizer state `state` (-1: the parameter
/// itself), made zeroed when the rank has none yet; null on an error.
whale_rt_tensor *rankTensor(whale_rt_context *ctx, const std::string &name,
                            const std::vector<int64_t> &localShape, int state);

/// A rank's own copy of parameter `name` (at its part's `localShape`), or
/// of its optimizer state `state` (-1: the parameter itself), as bytes;
/// made zeroed when the rank has none yet. What a reshard moves.
std::string readRankTensor(whale_rt_context *ctx, const std::string &name,
                           const std::vector<int64_t> &localShape, int state,
                           std::vector<uint8_t> &out);
std::string writeRankTensor(whale_rt_context *ctx, const std::string &name,
                            const std::vector<int64_t> &localShape, int state,
                            const std::vector<uint8_t> &bytes);

} // namespace whale

#endif
