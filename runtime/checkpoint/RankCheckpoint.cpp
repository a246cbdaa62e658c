//===- RankCheckpoint.cpp - a plan's state as one file per rank -----------===//

#include "runtime/checkpoint/RankCheckpoint.h"

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/checkpoint/CheckpointSet.h"
#include "runtime/store/Safetensors.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>

namespace whale {

namespace {

namespace fs = std::filesystem;

constexpr const char *kRankFormat = "whale-rank-checkpoint-1";

std::string rankFile(const std::string &dir, int64_t rank) {
  char name[32];
  std::snprintf(name, sizeof name, "rank-%05lld.safetensors",
                static_cast<long long>(rank));
  return (fs::path(dir) / name).string();
}

/// The file name of `path`, without its folder.
std::string fileName(const std::string &path) {
  return fs::path(path).filename().string();
}

bool exists(const std::string &path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

/// A whole decimal integer, optionally negative, that fits; false when
/// `text` is anything else.
bool parseDecimal(const std::string &text, long long &out) {
  const char *digits = text.c_str() + (text.size() > 0 && text[0] == '-');
  if (*digits < '0' || *digits > '9')
    return false;
  char *end = nullptr;
  errno = 0;
  out = std::strtoll(text.c_str(), &end, 10);
  return errno == 0 && *end == '\0';
}

std::string joinInts(const std::vector<int64_t> &v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

/// "1,2,3" (or "") into numbers; false when it is not that.
bool splitInts(const std::string &text, std::vector<int64_t> &out) {
  out.clear();
  if (text.empty())
    return true;
  for (size_t at = 0;;) {
    const size_t comma = text.find(',', at);
    long long v = 0;
    if (!parseDecimal(text.substr(at, comma - at), v) || v < 0)
      return false;
    out.push_back(v);
    if (comma == std::string::npos)
      return true;
    at = comma + 1;
  }
}

bool parseNumber(const std::map<std::string, std::string> &meta,
                 const std::string &key, int64_t &out) {
  auto it = meta.find(key);
  long long v = 0;
  if (it == meta.end() || !parseDecimal(it->second, v))
    return false;
  out = v;
  return true;
}

/// The step and the seed, which every rank of `out` holds.
void addScalars(StateCheckpoint &out) {
  for (const char *scalar : {"step", "seed"}) {
    StateTensor t{scalar, {}, 8, {}};
    int64_t value =
        std::string(scalar) == "step" ? out.nextStep : int64_t(out.seed);
    std::vector<uint8_t> bytes(8);
    std::memcpy(bytes.data(), &value, 8);
    for (size_t r = 0; r < out.layout.ranks.size(); ++r) {
      t.holders.push_back({int64_t(r), Box{}});
      out.held[{int64_t(r), scalar}][Box{}] = bytes;
    }
    out.layout.tensors.push_back(t);
  }
}

/// The single-file checkpoint: one rank holding every tensor whole.
std::string loadSingleFile(const std::string &path, StateCheckpoint &out) {
  std::string error;
  std::string file = checkpointFile(path, /*saving=*/false, error);
  rt::Checkpoint ckpt;
  if (rt::Status st = rt::readSafetensors(file, ckpt); !st.isOk())
    return st.message();
  // bf16, fp16 or f64 tensors as the f32 the ranks hold (issue 92 item 13).
  rt::widenFloatTensors(ckpt);
  if (std::string err =
          checkpointPosition(ckpt.metadata, file, out.nextStep, out.seed);
      !err.empty())
    return err;
  out.model = ckpt.metadata["model"];
  out.layout = StateCollection();
  out.layout.model = out.model;
  out.layout.ranks = {{"checkpoint", "checkpoint"}};
  out.held.clear();
  for (rt::StoredTensor &t : ckpt.tensors) {
    int64_t size = rt::safetensorsDtypeSize(t.dtype);
    Box whole = wholeBox(t.shape);
    out.layout.tensors.push_back({t.name, t.shape, size, {{0, whole}}});
    out.held[{0, t.name}][whole] = std::move(t.data);
  }
  addScalars(out);
  return "";
}

} // namespace

bool isRankCheckpoint(const std::string &path) {
  (void)rt::recoverCheckpointSet(path);
  std::error_code ec;
  const std::string suffix = ".safetensors";
  for (fs::directory_iterator it(path, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("rank-", 0) == 0 && name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return true;
  }
  return false;
}

std::string newCheckpointSetId() {
  std::random_device device;
  uint64_t id = (uint64_t(device()) << 32) ^ device();
  char text[24];
  std::snprintf(text, sizeof text, "%016llx",
                static_cast<unsigned long long>(id));
  return text;
}

std::string writeRankFiles(const std::string &folder,
                           const StateCheckpoint &ckpt,
                           const std::string &setId,
                           const std::set<int64_t> &only) {
  const StateCollection &layout = ckpt.layout;
  for (size_t r = 0; r < layout.ranks.size(); ++r) {
    if (!only.empty() && !only.count(static_cast<int64_t>(r)))
      continue;
    rt::Checkpoint file;
    file.metadata["format"] = kRankFormat;
    file.metadata["model"] = ckpt.model;
    file.metadata["step"] = std::to_string(ckpt.nextStep);
    file.metadata["seed"] = std::to_string(ckpt.seed);
    file.metadata["rank"] = std::to_string(r);
    file.metadata["ranks"] = std::to_string(layout.ranks.size());
    file.metadata["device"] = layout.ranks[r].device;
    file.metadata["node"] = layout.ranks[r].node;
    file.metadata["set"] = setId;
    for (const StateTensor &t : layout.tensors) {
      if (t.shape.empty())
        continue; // the step and the seed are in the metadata
      for (const auto &[rank, box] : t.holders) {
        if (rank != static_cast<int64_t>(r))
          continue;
        auto held = ckpt.held.find({rank, t.name});
        if (held == ckpt.held.end() || !held->second.count(box))
          return "no data for " + box.str() + " of '" + t.name + "' of rank " +
                 std::to_string(r);
        // A rank holding two boxes of one tensor names the second apart.
        std::string name = t.name;
        if (file.find(name))
          name += "@" + joinInts(box.offset);
        file.metadata["whale.box." + name] =
            joinInts(box.offset) + ";" + joinInts(box.size);
        file.metadata["whale.shape." + name] = joinInts(t.shape);
        file.metadata["whale.tensor." + name] = t.name;
        file.tensors.push_back({name, "F32", box.size, held->second.at(box)});
      }
    }
    if (rt::Status st = rt::writeSafetensors(rankFile(folder, r), file);
        !st.isOk())
      return st.message();
  }
  return "";
}

std::string saveRankCheckpoint(const std::string &dir,
                               const StateCheckpoint &ckpt) {
  if (std::string err = rt::beginCheckpointSet(dir); !err.empty())
    return err;
  std::string err = writeRankFiles(
      rt::stagingFolder(dir), ckpt,
      ckpt.setId.empty() ? newCheckpointSetId() : ckpt.setId, {});
  if (err.empty())
    err = rt::commitCheckpointSet(dir);
  if (!err.empty())
    rt::abandonCheckpointSet(dir);
  return err;
}

std::string loadStateCheckpoint(const std::string &path, StateCheckpoint &out,
                                const std::set<int64_t> *only) {
  if (!isRankCheckpoint(path))
    return loadSingleFile(path, out);
  if (exists(path + "/" + kCheckpointFileName))
    return path + " holds both rank files and " + kCheckpointFileName +
           ", two checkpoints in one folder (an older Whale saved them so): "
           "move the one not wanted elsewhere";
  if (!exists(rankFile(path, 0)))
    return path + " holds rank files but not " + fileName(rankFile(path, 0)) +
           ": the checkpoint is incomplete";
  out = StateCheckpoint();
  std::map<std::string, size_t> at;
  int64_t ranks = 1;
  for (int64_t r = 0; r < ranks; ++r) {
    std::string file = rankFile(path, r);
    rt::Checkpoint ckpt;
    const bool withData = !only || only->count(r);
    if (r > 0 && !exists(file))
      return path + " has no " + fileName(file) + " of its " +
             std::to_string(ranks) + " ranks: the checkpoint is incomplete";
    if (rt::Status st = withData ? rt::readSafetensors(file, ckpt)
                                 : rt::readSafetensorsHeader(file, ckpt);
        !st.isOk())
      return st.message();
    auto &meta = ckpt.metadata;
    int64_t rank = -1, step = 0, fileRanks = 0;
    uint64_t seed = 0;
    if (meta["format"] != kRankFormat || !parseNumber(meta, "rank", rank) ||
        rank != r || !parseNumber(meta, "ranks", fileRanks) || fileRanks < 1 ||
        fileRanks > (1 << 20) || (r > 0 && fileRanks != ranks))
      return file + ": not rank " + std::to_string(r) + " of " +
             (r > 0 ? "the " + std::to_string(ranks) + " ranks of " : "") +
             "a whale rank checkpoint";
    ranks = fileRanks;
    if (std::string err = checkpointPosition(meta, file, step, seed);
        !err.empty())
      return err;
    if (r == 0) {
      out.model = meta["model"];
      out.nextStep = step;
      out.seed = seed;
      out.setId = meta["set"];
      out.layout.model = out.model;
    } else if (meta["model"] != out.model || step != out.nextStep ||
               seed != out.seed || meta["set"] != out.setId) {
      // Files of two saves: another run's, or an older Whale's save
      // interrupted between rank files.
      return file + " is not of the same save as " +
             fileName(rankFile(path, 0)) + " (" +
             (meta["model"] != out.model
                  ? "model '" + meta["model"] + "' against '" + out.model + "'"
              : step != out.nextStep
                  ? "step " + std::to_string(step) + " against " +
                        std::to_string(out.nextStep)
              : seed != out.seed ? "seed " + std::to_string(seed) +
                                       " against " + std::to_string(out.seed)
                                 : "another save of the same step") +
             "): the checkpoint's files do not belong together";
    }
    out.layout.ranks.push_back({meta["device"], meta["node"]});
    for (rt::StoredTensor &t : ckpt.tensors) {
      Box box;
      std::vector<int64_t> shape;
      const std::string boxText = meta["whale.box." + t.name];
      const size_t semicolon = boxText.find(';');
      const std::string offsets = boxText.substr(0, semicolon),
                        sizes = semicolon == std::string::npos
                                    ? std::string()
                                    : boxText.substr(semicolon + 1);
      std::string name = meta["whale.tensor." + t.name];
      if (name.empty() || semicolon == std::string::npos ||
          !splitInts(offsets, box.offset) || !splitInts(sizes, box.size) ||
          !splitInts(meta["whale.shape." + t.name], shape) ||
          box.offset.size() != shape.size() || box.size != t.shape ||
          !intersect(box, wholeBox(shape)) ||
          !(*intersect(box, wholeBox(shape)) == box))
        return file + ": tensor '" + t.name +
               "' has no box of its whole shape in the metadata";
      auto [it, fresh] = at.try_emplace(name, out.layout.tensors.size());
      if (fresh)
        out.layout.tensors.push_back(
            {name, shape, rt::safetensorsDtypeSize(t.dtype), {}});
      StateTensor &tensor = out.layout.tensors[it->second];
      if (tensor.shape != shape)
        return file + ": tensor '" + name + "' has another shape than in " +
               "the ranks before";
      tensor.holders.push_back({r, box});
      if (withData)
        out.held[{r, name}][box] = std::move(t.data);
    }
  }
  addScalars(out);
  return "";
}

std::string loadWholeTensors(const std::string &path, rt::Checkpoint &out) {
  // A single file reads as one rank holding every tensor whole (its bf16
  // and fp16 widened), a folder as its ranks' boxes: one path for both.
  out = rt::Checkpoint();
  StateCheckpoint state;
  if (std::string err = loadStateCheckpoint(path, state); !err.empty())
    return err;
  // One rank holding every f32 tensor whole: a reshard to it finds each
  // element in some rank's box, or says which part no rank holds.
  StateCollection whole;
  whole.model = state.model;
  whole.ranks = {{"export", "export"}};
  for (const StateTensor &t : state.layout.tensors)
    if (t.elementBytes == 4)
      whole.tensors.push_back({t.name, t.shape, 4, {{0, wholeBox(t.shape)}}});
  ReshardPlan plan;
  HeldState gathered;
  std::string error;
  if (!planReshard(state.layout, whole, plan, error) ||
      !applyReshard(whole, plan, state.held, gathered, error))
    return "checkpoint '" + path + "': " + error;
  out.metadata["model"] = state.model;
  for (const StateTensor &t : whole.tensors) {
    std::vector<uint8_t> &bytes = gathered[{0, t.name}][wholeBox(t.shape)];
    out.tensors.push_back({t.name, "F32", t.shape, std::move(bytes)});
  }
  return "";
}

} // namespace whale
