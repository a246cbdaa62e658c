//===- Checkpoint.cpp - a model's state to and from safetensors -----------===//

#include "runtime/checkpoint/Checkpoint.h"

#include "runtime/checkpoint/CheckpointSet.h"
#include "runtime/core/Parts.h"
#include "runtime/store/Safetensors.h"

#include "support/Limits.h"
#include "support/OutputFile.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace whale {

namespace {

std::string key(const Parameter &p, int state) {
  return state < 0 ? p.name : p.name + ".optimizer_" + std::to_string(state);
}

/// The tensor of a parameter (made zeroed if the model has not yet) or of
/// one of its optimizer states.
whale_rt_tensor *tensorOf(whale_rt_context *ctx, const Parameter &p,
                          int state) {
  whale_rt_tensor *t = nullptr;
  whale_rt_param(ctx, p.name.c_str(), WHALE_RT_INIT_ZEROS, nullptr, 0,
                 static_cast<int32_t>(p.shape.size()), p.shape.data(), &t);
  if (t && state >= 0)
    whale_rt_optimizer_state(ctx, t, state, &t);
  return t;
}

} // namespace

namespace {
bool decimal(const std::map<std::string, std::string> &meta,
             const std::string &key, uint64_t most, uint64_t &out) {
  auto it = meta.find(key);
  if (it == meta.end() || it->second.empty() || it->second.size() > 20 ||
      !std::all_of(it->second.begin(), it->second.end(),
                   [](unsigned char c) { return std::isdigit(c) != 0; }))
    return false;
  errno = 0;
  out = std::strtoull(it->second.c_str(), nullptr, 10);
  return errno == 0 && out <= most;
}
} // namespace

std::string checkpointPosition(const std::map<std::string, std::string> &meta,
                               const std::string &file, int64_t &step,
                               uint64_t &seed) {
  uint64_t s = 0;
  if (!decimal(meta, "step", kMaxSteps, s))
    return file + ": the step in its metadata is not a number from 0 to " +
           std::to_string(kMaxSteps);
  if (!decimal(meta, "seed", UINT64_MAX, seed))
    return file + ": the seed in its metadata is not a number";
  step = static_cast<int64_t>(s);
  return "";
}

std::string checkResumable(const std::string &path, int64_t nextStep,
                           int64_t steps) {
  if (nextStep < steps)
    return "";
  return "checkpoint '" + path + "' is at step " + std::to_string(nextStep) +
         ", which leaves nothing of this run's " + std::to_string(steps) +
         " steps; give more with --steps";
}

bool isSingleFilePath(const std::string &path) {
  std::error_code ec;
  const std::string suffix = ".safetensors";
  return (path.size() >= suffix.size() &&
          path.compare(path.size() - suffix.size(), suffix.size(), suffix) ==
              0) ||
         std::filesystem::is_regular_file(path, ec);
}

std::string checkpointFile(const std::string &path, bool saving,
                           std::string &error) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (isSingleFilePath(path))
    return path;
  if (!saving)
    (void)rt::recoverCheckpointSet(path);
  if (saving) {
    fs::create_directories(path, ec);
    if (ec) {
      error = "cannot make checkpoint folder '" + path + "': " + ec.message();
      return "";
    }
  }
  return (fs::path(path) / kCheckpointFileName).string();
}

std::string checkSaveDestination(const std::string &path) {
  std::string err;
  if (isSingleFilePath(path)) {
    err = rt::checkOutputPath(path, "the checkpoint");
  } else {
    // A folder is made beside where it goes (PATH.saving): that place
    // must take it (not a folder under a file, not /proc).
    err = rt::checkReplaceableFolder(path);
    if (err.empty())
      err = rt::checkFolderTakesFiles(path, "the checkpoint");
  }
  return err.empty() ? "" : "--save: " + err;
}

std::string saveCheckpoint(whale_rt_context *ctx, const std::string &path,
                           const std::string &model, int64_t nextStep,
                           uint64_t seed, const std::vector<Parameter> &params,
                           int stateCount) {
  rt::Checkpoint ckpt;
  ckpt.metadata["format"] = "whale-checkpoint-1";
  ckpt.metadata["model"] = model;
  ckpt.metadata["step"] = std::to_string(nextStep);
  ckpt.metadata["seed"] = std::to_string(seed);
  for (const Parameter &p : params)
    for (int s = -1; s < stateCount; ++s) {
      whale_rt_tensor *t = tensorOf(ctx, p, s);
      if (!t)
        return whale_rt_last_error(ctx);
      int64_t n = 1;
      for (int64_t d : p.shape)
        n *= d;
      std::vector<uint8_t> bytes(static_cast<size_t>(n * 4));
      if (whale_rt_tensor_read(ctx, t, bytes.data(), n * 4) != WHALE_RT_OK)
        return whale_rt_last_error(ctx);
      ckpt.tensors.push_back({key(p, s), "F32", p.shape, std::move(bytes)});
    }
  if (isSingleFilePath(path)) {
    rt::Status st = rt::writeSafetensors(path, ckpt);
    return st ? "" : st.message();
  }
  // A folder is replaced whole, rank files of an earlier save included,
  // so that it never holds two checkpoints.
  if (std::string err = rt::beginCheckpointSet(path); !err.empty())
    return err;
  rt::Status st = rt::writeSafetensors(
      (std::filesystem::path(rt::stagingFolder(path)) / kCheckpointFileName)
          .string(),
      ckpt);
  std::string err = st ? rt::commitCheckpointSet(path) : st.message();
  if (!err.empty())
    rt::abandonCheckpointSet(path);
  return err;
}

std::string loadCheckpoint(whale_rt_context *ctx, const std::string &path,
                           const std::string &model,
                           const std::vector<Parameter> &params, int stateCount,
                           int64_t &nextStep) {
  rt::Checkpoint ckpt;
  std::string error;
  std::string file = checkpointFile(path, /*saving=*/false, error);
  if (rt::Status st = rt::readSafetensors(file, ckpt); !st)
    return st.message();
  // A checkpoint in bf16, fp16 or f64 loads into the model's f32 (issue 92
  // item 13): widened exactly, or f64 rounded.
  rt::widenFloatTensors(ckpt);
  if (ckpt.metadata["model"] != model)
    return "checkpoint '" + path + "' is of model '" + ckpt.metadata["model"] +
           "', not '" + model + "'";
  uint64_t seed = 0;
  if (std::string err = checkpointPosition(ckpt.metadata, file, nextStep, seed);
      !err.empty())
    return err;
  for (const Parameter &p : params)
    for (int s = -1; s < stateCount; ++s) {
      const rt::StoredTensor *stored = ckpt.find(key(p, s));
      if (!stored)
        return "checkpoint '" + path + "' has no '" + key(p, s) + "'";
      if (stored->dtype != "F32")
        return "checkpoint '" + path + "': '" + key(p, s) + "' is " +
               stored->dtype + ", not a float tensor the model's f32 takes";
      if (stored->shape != p.shape)
        return "checkpoint '" + path + "': '" + key(p, s) +
               "' does not have the model's shape";
      whale_rt_tensor *t = tensorOf(ctx, p, s);
      if (!t)
        return whale_rt_last_error(ctx);
      if (whale_rt_tensor_write(ctx, t, stored->data.data(),
                                static_cast<int64_t>(stored->data.size())) !=
          WHALE_RT_OK)
        return whale_rt_last_error(ctx);
    }
  return "";
}

} // namespace whale

namespace whale {

std::string readParameters(whale_rt_context *ctx,
                           const std::vector<Parameter> &params,
                           std::map<std::string, std::vector<float>> &out) {
  for (const Parameter &p : params) {
    whale_rt_tensor *t = tensorOf(ctx, p, -1);
    if (!t)
      return whale_rt_last_error(ctx);
    int64_t n = 1;
    for (int64_t e : p.shape)
      n *= e;
    std::vector<float> &values = out[p.name];
    values.resize(static_cast<size_t>(n));
    if (whale_rt_tensor_read(ctx, t, values.data(), n * 4) != WHALE_RT_OK)
      return whale_rt_last_error(ctx);
  }
  return "";
}

std::string writeParameter(whale_rt_context *ctx, const Parameter &p,
                           const float *values, int64_t count) {
  int64_t n = 1;
  for (int64_t e : p.shape)
    n *= e;
  if (count != n)
    return "parameter '" + p.name + "' has " + std::to_string(n) +
           " elements, not " + std::to_string(count);
  whale_rt_tensor *t = tensorOf(ctx, p, -1);
  if (!t || whale_rt_tensor_write(ctx, t, values, n * 4) != WHALE_RT_OK)
    return whale_rt_last_error(ctx);
  return "";
}

std::string partRuns(const Parameter &p, int64_t part, PartRuns &out) {
  out.localShape = p.shape;
  rt::PartRange range{0, 1};
  if (p.shards > 1) {
    if (!rt::partOf(p.shape[p.axis], p.shards,
                    p.weights.empty() ? nullptr : p.weights.data(), part,
                    range))
      return "parameter '" + p.name + "' has no part " + std::to_string(part) +
             " of " + std::to_string(p.shards);
    out.localShape[p.axis] = range.size;
  }
  int64_t outer = 1, inner = sizeof(float);
  for (int64_t d = 0; d < static_cast<int64_t>(p.shape.size()); ++d)
    if (p.shards > 1 && d < p.axis)
      outer *= p.shape[d];
    else if (p.shards <= 1 || d > p.axis)
      inner *= p.shape[d];
  // Each of `outer` runs of the whole holds the parts side by side.
  out.outer = outer;
  out.block = p.shards > 1 ? range.size * inner : inner;
  out.stride = p.shards > 1 ? p.shape[p.axis] * inner : inner;
  out.offset = p.shards > 1 ? range.offset * inner : 0;
  return "";
}

std::string copyShardState(whale_rt_context *whole, whale_rt_context *rank,
                           const std::vector<Parameter> &params, int stateCount,
                           int64_t part, bool toRank, int64_t replica,
                           bool values) {
  for (const Parameter &p : params) {
    const bool value = p.valueOwned ? p.holdsValue(replica) : values;
    const bool states = p.stateOwner < 0 ? value : p.holdsState(replica);
    if (!value && !states)
      continue;
    PartRuns runs;
    if (std::string err = partRuns(p, part, runs); !err.empty())
      return err;
    Parameter local = p;
    local.shape = runs.localShape;
    const int64_t outer = runs.outer, block = runs.block, stride = runs.stride,
                  offset = runs.offset;
    for (int s = value ? -1 : 0; s < (states ? stateCount : 0); ++s) {
      whale_rt_tensor *w = tensorOf(whole, p, s), *r = tensorOf(rank, local, s);
      if (!w)
        return whale_rt_last_error(whole);
      if (!r)
        return whale_rt_last_error(rank);
      // The whole lives on the host; the rank's part may be on a GPU, so
      // it moves through a host copy.
      auto *wd = static_cast<char *>(whale_rt_tensor_data(w));
      std::vector<char> staged(static_cast<size_t>(outer * block));
      if (!toRank && whale_rt_tensor_read(rank, r, staged.data(),
                                          outer * block) != WHALE_RT_OK)
        return whale_rt_last_error(rank);
      for (int64_t o = 0; o < outer; ++o) {
        char *at = wd + o * stride + offset, *mine = staged.data() + o * block;
        if (toRank)
          std::memcpy(mine, at, block);
        else
          std::memcpy(at, mine, block);
      }
      if (toRank && whale_rt_tensor_write(rank, r, staged.data(),
                                          outer * block) != WHALE_RT_OK)
        return whale_rt_last_error(rank);
    }
  }
  return "";
}

whale_rt_tensor *rankTensor(whale_rt_context *ctx, const std::string &name,
                            const std::vector<int64_t> &localShape, int state) {
  return tensorOf(ctx, Parameter{name, localShape}, state);
}

std::string readRankTensor(whale_rt_context *ctx, const std::string &name,
                           const std::vector<int64_t> &localShape, int state,
                           std::vector<uint8_t> &out) {
  whale_rt_tensor *t = tensorOf(ctx, Parameter{name, localShape}, state);
  if (!t)
    return whale_rt_last_error(ctx);
  int64_t n = sizeof(float);
  for (int64_t d : localShape)
    n *= d;
  out.resize(static_cast<size_t>(n));
  if (whale_rt_tensor_read(ctx, t, out.data(), n) != WHALE_RT_OK)
    return whale_rt_last_error(ctx);
  return "";
}

std::string writeRankTensor(whale_rt_context *ctx, const std::string &name,
                            const std::vector<int64_t> &localShape, int state,
                            const std::vector<uint8_t> &bytes) {
  whale_rt_tensor *t = tensorOf(ctx, Parameter{name, localShape}, state);
  if (!t)
    return whale_rt_last_error(ctx);
  if (whale_rt_tensor_write(ctx, t, bytes.data(),
                            static_cast<int64_t>(bytes.size())) != WHALE_RT_OK)
    return whale_rt_last_error(ctx);
  return "";
}

} // namespace whale
