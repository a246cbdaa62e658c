//===- RankFiles.cpp - a plan's ranks saved to and loaded from rank files -===//

#include "runtime/checkpoint/RankFiles.h"

#include "runtime/checkpoint/ProcessCheckpoint.h"
#include "runtime/state/PlanState.h"
#include "runtime/state/ProcessReshard.h"

namespace whale {
namespace {

/// A save's messages under mpirun (ProcessCheckpoint.h): four tags a step,
/// above any a rank program or the driver uses.
constexpr int64_t kSaveTag = int64_t(1) << 43;

} // namespace

LocalRanks localRanksOf(std::vector<OpenedRank> &ranks, int64_t replicas,
                        const ProcessLayout *processes, whale_rt_comm *comm,
                        const std::vector<int64_t> &grid) {
  LocalRanks out;
  out.contextOf = [&ranks, replicas](int64_t rank) -> whale_rt_context * {
    for (OpenedRank &r : ranks)
      if (r.place.stage * replicas + r.place.replica == rank)
        return r.ctx.get();
    return nullptr; // another process's rank
  };
  if (!processes)
    return out;
  out.processes = processes;
  out.comm = comm;
  out.grid = grid;
  for (const OpenedRank &r : ranks)
    out.own.insert(r.place.stage * replicas + r.place.replica);
  return out;
}

std::string saveRankFiles(const std::string &dir, const StateCollection &layout,
                          int64_t nextStep, uint64_t seed,
                          const LocalRanks &ranks) {
  StateCheckpoint ckpt;
  ReshardPlan own;
  ckpt.model = layout.model;
  ckpt.nextStep = nextStep;
  ckpt.seed = seed;
  ckpt.layout = layout;
  std::string why;
  if (!planReshard(ckpt.layout, ckpt.layout, own, why))
    return why;
  if (std::string err = extractState(ckpt.layout, nextStep, seed, own,
                                     ckpt.layout, ranks.contextOf, ckpt.held);
      !err.empty())
    return err;
  // Under mpirun each process writes its own ranks' files: the state never
  // passes through one process.
  if (ranks.processes)
    return saveRankCheckpointOnProcesses(ranks.comm, *ranks.processes,
                                         kSaveTag + 4 * nextStep, dir, ckpt,
                                         ranks.own);
  return saveRankCheckpoint(dir, ckpt);
}

std::string readPieceSources(const std::string &path,
                             const ReshardPlan &reshard,
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

std::string loadRankFiles(const std::string &dir, const StateCollection &ours,
                          const LocalRanks &ranks, int64_t &nextStep) {
  // The files' headers first, then the data of the old ranks this
  // process's new ranks read from, and no more.
  StateCheckpoint ckpt;
  ReshardPlan reshard;
  HeldState moved;
  const std::set<int64_t> none;
  if (std::string err = loadStateCheckpoint(dir, ckpt, &none); !err.empty())
    return err;
  if (ckpt.model != ours.model)
    return dir + " is a checkpoint of '" + ckpt.model + "', not of '" +
           ours.model + "'";
  StateCollection mine = ours;
  std::string error;
  if (!planReshard(ckpt.layout, mine, reshard, error))
    return "loading " + dir + ": " + error;
  if (ranks.processes)
    keepLocalPieces(*ranks.processes, ranks.grid, mine, reshard);
  if (std::string err = readPieceSources(dir, reshard, ckpt); !err.empty())
    return err;
  if (!applyReshard(mine, reshard, ckpt.held, moved, error))
    return "loading " + dir + ": " + error;
  if (std::string err = injectState(moved, ranks.contextOf); !err.empty())
    return err;
  nextStep = ckpt.nextStep;
  return "";
}

} // namespace whale
