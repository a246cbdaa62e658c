//===- RankFiles.h - a plan's ranks saved to and loaded from rank files -*- C++
//-*-===//
//
// One file per rank (runtime/checkpoint/RankCheckpoint.h), each with the boxes
// its rank holds: saved from a running plan's ranks, and loaded into the
// ranks of any plan of the model, resharded as it loads (only the files of
// the old ranks that this process's new ranks read from are read whole).
// What `whale run` under a plan and `whale-exec` both do, in one process or
// under mpirun (each process its own ranks' files).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CHECKPOINT_RANKFILES_H
#define WHALE_RUNTIME_CHECKPOINT_RANKFILES_H

#include "runtime/checkpoint/RankCheckpoint.h"
#include "runtime/run/Processes.h"

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace whale {

/// The ranks of a running plan as this process sees them.
struct LocalRanks {
  /// The context of the plan's rank i; null for another process's rank.
  std::function<whale_rt_context *(int64_t rank)> contextOf;
  /// Under mpirun: the processes and their communicator (else null), the
  /// plan's grid (rank -> device) and the ranks this process runs.
  const ProcessLayout *processes = nullptr;
  whale_rt_comm *comm = nullptr;
  std::vector<int64_t> grid;
  std::set<int64_t> own;
};

/// This process's `ranks` of a plan with `replicas` replicas a stage (rank
/// s * replicas + r); under mpirun (`processes` not null) with the
/// communicator and the plan's grid.
LocalRanks localRanksOf(std::vector<OpenedRank> &ranks, int64_t replicas,
                        const ProcessLayout *processes, whale_rt_comm *comm,
                        const std::vector<int64_t> &grid);

/// Saves the state of ranks holding `layout` after `nextStep` steps (of
/// `seed`) into the folder `dir`, one file per rank, the folder replaced
/// as one unit; "" or why not (the folder then keeps its previous set).
std::string saveRankFiles(const std::string &dir, const StateCollection &layout,
                          int64_t nextStep, uint64_t seed,
                          const LocalRanks &ranks);

/// Loads the rank files in `dir` (of any plan of `ours.model`) into ranks
/// that hold `ours`, resharded; `nextStep` is then the files' next step.
std::string loadRankFiles(const std::string &dir, const StateCollection &ours,
                          const LocalRanks &ranks, int64_t &nextStep);

/// The data of the old ranks that the pieces of `reshard` read, from the
/// rank files at `path` (whose headers `ckpt` holds already: its model and
/// step are checked against the files' again).
std::string readPieceSources(const std::string &path,
                             const ReshardPlan &reshard, StateCheckpoint &ckpt);

} // namespace whale

#endif
