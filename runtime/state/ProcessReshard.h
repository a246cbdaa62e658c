//===- ProcessReshard.h - a reshard plan carried out across processes -*- C++
//-*-===//
//
// Under mpirun each process holds the state of its own ranks. Carrying out
// a reshard plan (Reshard.h) there, each process reads the boxes its old
// ranks hold, sends each box a piece reads to the processes whose new
// ranks need it (once a process, over the old plan's communicator, between
// the processes' first ranks, while the ranks are idle) and receives those
// its own new ranks need; then it builds its new ranks' boxes alone.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_STATE_PROCESSRESHARD_H
#define WHALE_RUNTIME_STATE_PROCESSRESHARD_H

#include "runtime/run/Processes.h"
#include "runtime/state/Reshard.h"

#include <functional>

namespace whale {

/// The plan's pieces and the new collection's holders restricted to the
/// new ranks of this process (`newDevice(rank)` of the new plan, owned per
/// `after`); what applyReshard then builds from what this process holds.
void keepLocalPieces(const ProcessLayout &after,
                     const std::vector<int64_t> &newGrid, StateCollection &to,
                     ReshardPlan &plan);

/// Moves the boxes of `held` that pieces of `plan` read from the process
/// holding them (`before`, `oldGrid`) to each process whose new ranks
/// need them (`after`, `newGrid`), over `comm` (the old plan's ranks);
/// the scalars (the step, the seed) every process has already.
/// `sentBytes`: what all processes sent each other (the same on each).
/// "" or why not.
std::string exchangePieces(whale_rt_comm *comm, const ProcessLayout &before,
                           const ProcessLayout &after,
                           const std::vector<int64_t> &oldGrid,
                           const std::vector<int64_t> &newGrid,
                           const StateCollection &to, const ReshardPlan &plan,
                           HeldState &held, int64_t &sentBytes);

/// The same where the processes are not the old plan's (after a process
/// died, over the survivors' communicator): `sourceOf(old rank)` is the
/// process that holds that rank's boxes, `destOf(new rank)` the one that
/// runs it, both numbered as in `comm`, where this process is `me` and
/// process p's first rank is p * `perProcess`.
std::string
exchangePiecesBetween(whale_rt_comm *comm, int32_t me, int64_t perProcess,
                      const std::function<int32_t(int64_t)> &sourceOf,
                      const std::function<int32_t(int64_t)> &destOf,
                      const StateCollection &to, const ReshardPlan &plan,
                      HeldState &held, int64_t &sentBytes);

} // namespace whale

#endif
