//===- RankState.cpp - a planned run's state out of its ranks and in ------===//
//
// The state the ranks hold, by the boxes of the plan's state collection
// (its rank i is the grid's rank i), read out of them or written into
// them; the step and the seed are the driver's. Saves (one file, or one
// per rank), the load of a rank checkpoint of any plan, and the in-memory
// store's updates go through here.
//
//===----------------------------------------------------------------------===//

#include "lib/elastic/ProcessCheckpoint.h"
#include "lib/elastic/ProcessReshard.h"
#include "lib/elastic/ProcessStore.h"
#include "lib/elastic/RankCheckpoint.h"
#include "lib/elastic/StateCollection.h"
#include "lib/train/PlannedRun.h"
#include "runtime/exec/Checkpoint.h"

#include <chrono>
#include <cstring>
#include <tuple>

namespace whale {
namespace {

// A save's messages (ProcessCheckpoint.h): four tags a step.
constexpr int64_t kSaveTag = int64_t(1) << 43;

/// A state tensor's name as the ranks know it: the parameter's, and which
/// of its optimizer tensors (NAME.optimizer_K) it is, or -1.
std::string splitName(const std::string &name, int &state) {
  state = -1;
  size_t at = name.rfind(".optimizer_");
  if (at == std::string::npos)
    return name;
  state = std::atoi(name.c_str() + at + 11);
  return name.substr(0, at);
}

} // namespace

std::string readSources(const std::string &path, const ReshardPlan &reshard,
                        StateCheckpoint &ckpt) {
  std::set<int64_t> sources;
  for (const ReshardPiece &p : reshard.pieces)
    sources.insert(p.from);
  StateCheckpoint part;
  if (std::string err = loadStateCheckpoint(path, part, &sources); !err.empty())
    return err;
  if (part.nextStep != ckpt.nextStep || part.model != ckpt.model)
    return path + " changed while it was read";
  ckpt.held = std::move(part.held);
  return "";
}

std::string PlannedRun::extractState(const StateCollection &layout,
                                     int64_t step, const ReshardPlan &reshard,
                                     const StateCollection &next,
                                     HeldState &held) {
  // Only the boxes some piece reads (of one replica, where the others hold
  // the same).
  std::set<std::tuple<int64_t, std::string, Box>> read;
  for (const ReshardPiece &p : reshard.pieces)
    read.insert({p.from, next.tensors[p.tensor].name, p.held});
  for (const StateTensor &t : layout.tensors) {
    if (t.shape.empty()) { // the step and the seed, as the driver has them
      int64_t value =
          t.name == "seed" ? static_cast<int64_t>(settings.seed) : step;
      std::vector<uint8_t> bytes(sizeof value);
      std::memcpy(bytes.data(), &value, sizeof value);
      for (const auto &[rank, box] : t.holders)
        if (read.count({rank, t.name, box}))
          held[{rank, t.name}][box] = bytes;
      continue;
    }
    int state = -1;
    std::string name = splitName(t.name, state);
    for (const auto &[rank, box] : t.holders) {
      whale_rt_context *ctx = contextOf(rank);
      if (!ctx || !read.count({rank, t.name, box}))
        continue;
      if (std::string err = readRankTensor(ctx, name, box.size, state,
                                           held[{rank, t.name}][box]);
          !err.empty())
        return err;
    }
  }
  return "";
}

std::string PlannedRun::injectState(const HeldState &held) {
  for (const auto &[key, boxes] : held) {
    const auto &[rank, tensorName] = key;
    whale_rt_context *ctx = contextOf(rank);
    if (!ctx)
      continue; // another process's rank
    int state = -1;
    std::string name = splitName(tensorName, state);
    for (const auto &[box, bytes] : boxes)
      if (!box.size.empty())
        if (std::string err =
                writeRankTensor(ctx, name, box.size, state, bytes);
            !err.empty())
          return err;
  }
  return "";
}

std::string PlannedRun::copyBoxes(const std::vector<OpenedRank> &from,
                                  const StateCollection &after,
                                  const ReshardPlan &reshard) {
  for (const ReshardPiece &p : reshard.pieces) {
    const StateTensor &t = after.tensors[p.tensor];
    if (t.shape.empty())
      continue; // the step and the seed are the driver's
    int state = -1;
    std::string name = splitName(t.name, state);
    whale_rt_context *src = from[p.from].ctx.get(),
                     *dst = ranks[p.to].ctx.get();
    whale_rt_tensor *in = rankTensor(src, name, p.held.size, state),
                    *out = rankTensor(dst, name, p.needed.size, state);
    if (!in || !out)
      return whale_rt_last_error(in ? dst : src);
    copyBox(static_cast<const uint8_t *>(whale_rt_tensor_data(in)), p.held,
            static_cast<uint8_t *>(whale_rt_tensor_data(out)), p.needed, p.box,
            t.elementBytes);
  }
  return "";
}

std::string PlannedRun::saveState(int64_t nextStep, bool gatherAnyway) {
  if (!options.savePath.empty())
    phase("saving the checkpoint to " + options.savePath);
  struct Done {
    const PlannedRun &run;
    ~Done() { run.phase(""); }
  } done{*this};
  if (!options.savePath.empty() && options.saveRanks) {
    StateCheckpoint ckpt;
    ReshardPlan own;
    ckpt.model = plan.model;
    ckpt.nextStep = nextStep;
    ckpt.seed = settings.seed;
    std::string why;
    if (!stateOf(plan, cluster, ckpt.layout, why) ||
        !planReshard(ckpt.layout, ckpt.layout, own, why))
      return why;
    if (std::string err =
            extractState(ckpt.layout, nextStep, own, ckpt.layout, ckpt.held);
        !err.empty())
      return err;
    // Under mpirun each process writes its own ranks' files: the state
    // never passes through one process.
    if (options.processes) {
      std::set<int64_t> mine;
      for (const OpenedRank &rank : ranks)
        mine.insert(rank.place.stage * plan.replicas + rank.place.replica);
      if (std::string err = saveRankCheckpointOnProcesses(
              comm.get(), layout, kSaveTag + 4 * nextStep, options.savePath,
              ckpt, mine);
          !err.empty())
        return err;
    } else if (std::string err = saveRankCheckpoint(options.savePath, ckpt);
               !err.empty()) {
      return err;
    }
  }
  const bool wholeSave = !options.savePath.empty() && !options.saveRanks;
  if (!wholeSave && !gatherAnyway)
    return "";
  if (std::string err = gatherToHost(); !err.empty())
    return err;
  if (!wholeSave || processRank > 0)
    return "";
  return saveCheckpoint(host.get(), options.savePath, plan.model, nextStep,
                        settings.seed, allParams, settings.stateCount);
}

std::string PlannedRun::loadRankCheckpoint() {
  // One file per rank, of any plan: a reshard from its boxes to ours. The
  // files' headers first, then the data of the old ranks this process's
  // new ranks read from, and no more.
  StateCheckpoint ckpt;
  StateCollection ours;
  ReshardPlan reshard;
  HeldState moved;
  const std::set<int64_t> none;
  if (std::string err = loadStateCheckpoint(options.loadPath, ckpt, &none);
      !err.empty())
    return err;
  if (ckpt.model != plan.model)
    return options.loadPath + " is a checkpoint of '" + ckpt.model +
           "', not of '" + plan.model + "'";
  if (!stateOf(plan, cluster, ours, error) ||
      !planReshard(ckpt.layout, ours, reshard, error))
    return "loading " + options.loadPath + ": " + error;
  if (options.processes)
    keepLocalPieces(layout, plan.grid, ours, reshard);
  if (std::string err = readSources(options.loadPath, reshard, ckpt);
      !err.empty())
    return err;
  if (!applyReshard(ours, reshard, ckpt.held, moved, error))
    return "loading " + options.loadPath + ": " + error;
  if (std::string err = injectState(moved); !err.empty())
    return err;
  first = ckpt.nextStep;
  return "";
}

std::string PlannedRun::updateStore(int64_t step) {
  auto t0 = std::chrono::steady_clock::now();
  StateCollection collection;
  ReshardPlan own;
  if (!stateOf(plan, cluster, collection, error) ||
      !planReshard(collection, collection, own, error))
    return error;
  const bool acrossProcesses = options.processes && layout.processes > 1;
  HeldState &mine = acrossProcesses ? store.pendingOwn(collection, planVersion)
                                    : store.prepare(collection, planVersion);
  if (std::string err = extractState(collection, step, own, collection, mine);
      !err.empty()) {
    if (acrossProcesses)
      store.dropPending();
    else
      store.invalidate();
    return err;
  }
  if (acrossProcesses) {
    // The copy goes to the next process: a process's death takes all of
    // its ranks (lib/elastic/ProcessStore.h). Until both directions are
    // whole, the previous update stays the latest: a process that dies in
    // the middle leaves every survivor an update it can go back to.
    int64_t sent = 0;
    if (std::string err = exchangeStoreCopies(comm.get(), layout, mine,
                                              store.pendingCopy(), sent);
        !err.empty()) {
      store.dropPending();
      return err;
    }
    result.storeSentBytes += sent;
    store.commitPending(step);
  } else {
    store.commit(step);
  }
  ++result.storeUpdates;
  result.storeSeconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  return "";
}

} // namespace whale
