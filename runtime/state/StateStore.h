//===- StateStore.h - a job's state kept in memory, in a ring -----*- C++
//-*-===//
//
// The in-memory store of `whale run --replicate-every`: each worker's boxes
// of the plan's state as of a step, kept by the worker, and a copy kept by
// the next worker (a ring), so that losing any one worker loses no state.
// Updated in place: the buffers of one update are the next one's, so
// keeping the store costs copies, not fresh memory. The copies and their
// checksums (CRC-32C, by the processor's instruction where it has one) are
// made on a thread of the store's own while the next steps run: only
// taking the state out of the ranks holds the job up. Everything that
// reads the store waits for its copies first.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_STATE_STATESTORE_H
#define WHALE_RUNTIME_STATE_STATESTORE_H

#include "runtime/state/Reshard.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace whale {

class StateStore {
public:
  StateStore() = default;
  StateStore(const StateStore &) = delete;
  StateStore &operator=(const StateStore &) = delete;
  ~StateStore() { wait(); }

  /// The buffers an update fills (every worker's boxes of `layout`): the
  /// last update's when `version` (the plan's) is the same, else empty.
  /// Waits for the last update's copies.
  HeldState &prepare(const StateCollection &layout, int64_t version);
  /// Completes the update as of `step`: each worker's boxes copied to the
  /// next worker, on the store's thread (wait() for it); `background`
  /// false copies before it returns.
  void commit(int64_t step, bool background = true);
  /// Waits for the copies of the last commit; the seconds they took.
  double wait();
  /// The seconds every finished commit's copies took, in all.
  double copiedSeconds() const { return copiedSeconds_; }
  /// The step of the last update; -1 before any.
  int64_t step() const { return step_; }
  const StateCollection &layout() const { return layout_; }

  /// The state with worker `lost` gone: its boxes held by the next worker,
  /// from that worker's copy, each checked against the CRC-32C taken when
  /// it was copied (after waiting for the copies). A worker past the
  /// store's plan (added by an elastic change since its last update) held
  /// none of it: the state is all there. False, with `error`, when no copy
  /// survives or a copy is damaged (it is never used).
  bool surviving(int64_t lost, StateCollection &layout, HeldState &held,
                 std::string &error);

  /// For tests: flips a bit of the copy of `worker`'s first box, as memory
  /// gone bad would (across processes: of the latest update's copy of the
  /// previous process's boxes).
  void damageCopyOf(int64_t worker);
  void damageCopyFromAnotherProcess();

  // --- Ranks as processes (runtime/state/ProcessStore.h) ---------------
  // Each process's store holds its own ranks' boxes and the copy of the
  // previous process's, which the driver receives.
  //
  // A process may die in the middle of an update, after some processes
  // finished theirs and before others did. So across processes the store
  // keeps two updates whole: an update fills the buffers of the older one
  // (pendingOwn, pendingCopy) while the latest stays as it was, and only
  // commitPending makes it the latest. The survivors then take the newest
  // update every one of them holds (stepsHeld, takeSurviving at a step).

  /// The buffers an update across processes fills: this process's boxes
  /// of `layout` and, below, the previous process's copy; the older
  /// update's, reused where the plan (`version`) is the same.
  HeldState &pendingOwn(const StateCollection &layout, int64_t version);
  HeldState &pendingCopy();
  /// Makes the pending update, as of `step`, the latest (the latest becomes
  /// the older); the copy's checksums taken on the store's thread.
  void commitPending(int64_t step);
  /// Forgets an update that failed halfway; the latest stays.
  void dropPending();
  /// The steps of the updates held whole, newest first (-1 for none).
  std::vector<int64_t> stepsHeld();
  /// The update as of `step`: this process's boxes and the copies it keeps
  /// of the ranks in `lost` (all of another process's), each checked
  /// against its checksum; moved out, so the store is empty afterwards.
  /// False with `error` when no update of that step is held, or a copy is
  /// damaged.
  bool takeSurviving(const std::set<int64_t> &lost, int64_t step,
                     StateCollection &layout, HeldState &held,
                     std::string &error);
  /// Forgets the last update (one that failed halfway is no state).
  void invalidate() {
    wait();
    step_ = -1;
  }

private:
  void copyToKeepers();

  std::thread copier_;
  double copySeconds_ = 0, copiedSeconds_ = 0;
  int64_t step_ = -1, version_ = -1;
  StateCollection layout_;
  HeldState own_;                              // by (worker, tensor)
  std::map<int64_t, HeldState> copyOfPrevious_; // by the keeping worker
  /// The CRC-32C of each copied box, by (worker, tensor, box).
  std::map<std::tuple<int64_t, std::string, Box>, uint32_t> copyCrc_;

  /// One update across processes.
  struct Generation {
    int64_t step = -1, version = -1;
    StateCollection layout;
    HeldState own, copy;
    std::map<std::tuple<int64_t, std::string, Box>, uint32_t> copyCrc;
  };
  /// Across processes: the latest update, the one before it, and the
  /// buffers of one in progress (the older one's, taken).
  Generation latest_, older_, pending_;
};

} // namespace whale

#endif
