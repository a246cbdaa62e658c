//===- MoveState.h - a running job's state moved to a new plan's ranks -*- C++
//-*-===//
//
// At a step boundary a job goes on under another plan (other devices, or
// another compiled plan): the reshard plan from the old ranks' boxes to the
// new ranks' (runtime/state/Reshard.h) is carried out on the ranks
// themselves, in memory. `whale run`'s elastic changes
// (lib/train/DeviceChange.cpp) and `whale-exec`'s
// (runtime/bundle/BundleChange.cpp) both move their state through here, in
// one of two ways:
//   - on CPU devices in one process both plans' tensors are host memory:
//     each piece is copied straight from an old rank's tensor into a new
//     rank's, the old ranks kept open until then (copyPieces);
//   - elsewhere the pieces go through host copies: taken out of the old
//     ranks before they close and, under mpirun, sent over the old plan's
//     communicator to the processes whose new ranks need them (takePieces),
//     then written into the new ranks (putPieces).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_STATE_MOVESTATE_H
#define WHALE_RUNTIME_STATE_MOVESTATE_H

#include "runtime/checkpoint/RankFiles.h"
#include "runtime/state/Reshard.h"

#include <string>
#include <vector>

namespace whale {

/// A move in progress: the collections before and after, the plan between
/// them, and the pieces this process holds on their way.
struct StateMove {
  StateCollection before, after;
  ReshardPlan reshard;
  HeldState held;
  /// Under mpirun: the bytes all processes sent each other.
  int64_t processBytes = 0;
};

/// Plans the move from `before` to `after` into `move`; "" or why not (a
/// tensor of the new plan the old does not hold, at another shape).
std::string planMove(StateCollection before, StateCollection after,
                     StateMove &move);

/// Copies every piece of the move from the old ranks' tensors into the new
/// ranks' (both plans' ranks open, in this process, on CPU devices).
std::string copyPieces(const StateMove &move, const LocalRanks &old,
                       const LocalRanks &now);

/// Takes out of the old ranks the boxes the move reads at step boundary
/// `step` (the step and the seed as the driver has them) and, under mpirun,
/// sends them to the processes of `nextLayout` whose ranks on `nextGrid`
/// need them, keeping only this process's pieces. The old ranks may close
/// afterwards.
std::string takePieces(StateMove &move, int64_t step, uint64_t seed,
                       const LocalRanks &old, const ProcessLayout *nextLayout,
                       const std::vector<int64_t> &nextGrid);

/// Builds the new ranks' boxes from what takePieces kept and writes them in.
std::string putPieces(StateMove &move, const LocalRanks &now);

} // namespace whale

#endif
