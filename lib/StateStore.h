//===- StateStore.h - a job's state kept in memory, in a ring -----*- C++
//-*-===//
//
// The in-memory store of `whale run --replicate-every`: each worker's boxes
// of the plan's state as of a step, kept by the worker, and a copy kept by
// the next worker (a ring), so that losing any one worker loses no state.
// Updated in place: the buffers of one update are the next one's, so
// keeping the store costs copies, not fresh memory.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_STATESTORE_H
#define WHALE_LIB_STATESTORE_H

#include "lib/Reshard.h"

#include <cstdint>
#include <map>
#include <tuple>
#include <string>

namespace whale {

class StateStore {
public:
  /// The buffers an update fills (every worker's boxes of `layout`): the
  /// last update's when `version` (the plan's) is the same, else empty.
  HeldState &prepare(const StateCollection &layout, int64_t version);
  /// Completes the update as of `step`: each worker's boxes copied to the
  /// next worker.
  void commit(int64_t step);
  /// The step of the last update; -1 before any.
  int64_t step() const { return step_; }
  const StateCollection &layout() const { return layout_; }

  /// The state with worker `lost` gone: its boxes held by the next worker,
  /// from that worker's copy, each checked against the CRC-32 taken when it
  /// was copied. False, with `error`, when no copy survives or a copy is
  /// damaged (it is never used).
  bool surviving(int64_t lost, StateCollection &layout, HeldState &held,
                 std::string &error) const;

  /// For tests: flips a bit of the copy of `worker`'s first box, as memory
  /// gone bad would.
  void damageCopyOf(int64_t worker);

private:
  int64_t step_ = -1, version_ = -1;
  StateCollection layout_;
  HeldState own_;                              // by (worker, tensor)
  std::map<int64_t, HeldState> copyOfPrevious_; // by the keeping worker
  /// The CRC-32 of each copied box, by (worker, tensor, box).
  std::map<std::tuple<int64_t, std::string, Box>, uint32_t> copyCrc_;
};

} // namespace whale

#endif
