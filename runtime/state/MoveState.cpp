//===- MoveState.cpp - a running job's state moved to a new plan's ranks --===//

#include "runtime/state/MoveState.h"

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/state/PlanState.h"
#include "runtime/state/ProcessReshard.h"

namespace whale {

std::string planMove(StateCollection before, StateCollection after,
                     StateMove &move) {
  move = StateMove();
  move.before = std::move(before);
  move.after = std::move(after);
  std::string error;
  if (!planReshard(move.before, move.after, move.reshard, error))
    return error;
  return "";
}

std::string copyPieces(const StateMove &move, const LocalRanks &old,
                       const LocalRanks &now) {
  for (const ReshardPiece &p : move.reshard.pieces) {
    const StateTensor &t = move.after.tensors[p.tensor];
    if (t.shape.empty())
      continue; // the step and the seed are the driver's
    int state = -1;
    std::string name = rankTensorName(t.name, state);
    whale_rt_context *src = old.contextOf(p.from), *dst = now.contextOf(p.to);
    whale_rt_tensor *in = src ? rankTensor(src, name, p.held.size, state)
                              : nullptr,
                    *out = dst ? rankTensor(dst, name, p.needed.size, state)
                               : nullptr;
    if (!in || !out)
      return src && dst ? whale_rt_last_error(in ? dst : src)
                        : "a rank of the move is not in this process";
    copyBox(static_cast<const uint8_t *>(whale_rt_tensor_data(in)), p.held,
            static_cast<uint8_t *>(whale_rt_tensor_data(out)), p.needed, p.box,
            t.elementBytes);
  }
  return "";
}

std::string takePieces(StateMove &move, int64_t step, uint64_t seed,
                       const LocalRanks &old, const ProcessLayout *nextLayout,
                       const std::vector<int64_t> &nextGrid) {
  if (std::string err = extractState(move.before, step, seed, move.reshard,
                                     move.after, old.contextOf, move.held);
      !err.empty())
    return err;
  if (!old.processes || !nextLayout)
    return "";
  if (std::string err = exchangePieces(
          old.comm, *old.processes, *nextLayout, old.grid, nextGrid, move.after,
          move.reshard, move.held, move.processBytes);
      !err.empty())
    return err;
  keepLocalPieces(*nextLayout, nextGrid, move.after, move.reshard);
  return "";
}

std::string putPieces(StateMove &move, const LocalRanks &now) {
  HeldState moved;
  std::string error;
  if (!applyReshard(move.after, move.reshard, move.held, moved, error))
    return "resharding: " + error;
  return injectState(moved, now.contextOf);
}

} // namespace whale
