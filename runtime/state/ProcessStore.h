//===- ProcessStore.h - the in-memory store's copies across processes -*- C++
//-*-===//
//
// Under mpirun a process's death takes all of its ranks with it, so the
// store's ring (StateStore.h) runs over processes, not ranks: at each
// update every process sends the boxes its ranks hold to the next process
// and keeps those of the previous one. Losing any one process then loses
// no state: what it held is with the process after it.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_STATE_PROCESSSTORE_H
#define WHALE_RUNTIME_STATE_PROCESSSTORE_H

#include "runtime/run/Processes.h"
#include "runtime/state/Reshard.h"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace whale {

/// Sends `own` (this process's ranks' boxes) to the next process of the
/// ring and receives the previous process's into `copy`, reusing its
/// buffers where the sizes are the same; over `comm` between the
/// processes' first ranks, while the ranks are idle. `sentBytes`: the
/// bytes of boxes this process sent. "" or why not.
std::string exchangeStoreCopies(whale_rt_comm *comm,
                                const ProcessLayout &layout,
                                const HeldState &own, HeldState &copy,
                                int64_t &sentBytes);

/// The process (of `processes`, in the ring) that keeps a copy of
/// `process`'s boxes.
inline int32_t keeperOf(int32_t process, int32_t processes) {
  return (process + 1) % processes;
}

/// What a process loss leaves: the lost processes' numbers (of the
/// ring's `processes`), the plan ranks they ran (`grid[rank]` a device,
/// `layout` the processes' blocks), and each survivor's new number.
struct ProcessLoss {
  std::set<int32_t> lost;
  std::set<int64_t> lostRanks;
  std::vector<int32_t> renumbered; ///< by old number; -1 for a lost one

  ProcessLoss(const std::vector<int32_t> &lost, const ProcessLayout &layout,
              const std::vector<int64_t> &grid);
  /// "" when every lost process's keeper survives (the store's copies
  /// hold all it had), else which pair is gone.
  std::string uncovered(int32_t processes) const;
  /// The survivor (new number) holding the store's boxes of old rank
  /// `rank`: the process that ran it, or that process's keeper.
  int32_t holderOf(int64_t rank, const ProcessLayout &layout,
                   const std::vector<int64_t> &grid) const;
};

} // namespace whale

#endif
