//===- Communicator.h - collectives among the ranks of one process -*- C++
//-*-===//
//
// Ranks that run as threads of one process exchange tensors through shared
// memory: every collective over any group of ranks, and point-to-point
// messages. Every wait is bounded, so a plan that hangs (a rank that never
// arrives, a recv nobody sends to) becomes an error naming the op and the
// ranks instead of a frozen process.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_COMM_COMMUNICATOR_H
#define WHALE_RUNTIME_COMM_COMMUNICATOR_H

#include "runtime/Status.h"
#include "runtime/Tensor.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace whale::rt {

/// The bytes a rank has moved, by kind: what the planner's predictions are
/// checked against.
struct CommCounters {
  int64_t allReduceBytes = 0, allGatherBytes = 0, reduceScatterBytes = 0,
          broadcastBytes = 0, sendBytes = 0, recvBytes = 0;
};

class Communicator {
public:
  Communicator(int size, std::chrono::milliseconds timeout);

  int size() const { return size_; }

  /// Collectives: every rank of `group` (ranks in the same order on each)
  /// calls the same op with the same dtype and count; `rank` is the caller.
  /// Results are computed in group order, so every rank gets the same bits.
  /// Sums `count` elements in place.
  Status allReduce(int rank, const std::vector<int> &group, DType dtype,
                   void *data, int64_t count);
  /// `out` holds group.size() x count elements, rank group[i]'s at i.
  Status allGather(int rank, const std::vector<int> &group, DType dtype,
                   const void *in, int64_t count, void *out);
  /// `in` holds group.size() x count elements; the caller at position i of
  /// the group gets the sum of every rank's i-th part.
  Status reduceScatter(int rank, const std::vector<int> &group, DType dtype,
                       const void *in, int64_t count, void *out);
  /// `root`'s data is copied to every rank of the group.
  Status broadcast(int rank, const std::vector<int> &group, int root,
                   DType dtype, void *data, int64_t count);

  /// Point to point. A send is buffered and returns at once; a recv waits
  /// for the message from `from` with the same tag, dtype and count.
  Status send(int from, int to, int64_t tag, DType dtype, const void *data,
              int64_t count);
  Status recv(int to, int from, int64_t tag, DType dtype, void *data,
              int64_t count);

  /// Ends every wait, now and later, with `reason`: when one rank fails the
  /// others stop instead of waiting out the timeout.
  void abort(const std::string &reason);

  CommCounters counters(int rank) const;

  /// What each rank's device offers for device-side collectives (see
  /// Device::collectiveDevice), recorded when the rank binds; kUnbound
  /// until then.
  static constexpr int kUnbound = -2;
  void setCollectiveDevice(int rank, int device);
  int collectiveDevice(int rank) const;

private:
  struct Round;
  Status collective(const char *op, int rank, const std::vector<int> &group,
                    DType dtype, int64_t count, const void *in, void *out,
                    int64_t outCount, int root, int64_t *counter);
  Status checkRanks(const char *op, int rank,
                    const std::vector<int> &group) const;

  int size_;
  std::chrono::milliseconds timeout;
  mutable std::mutex mutex;
  std::condition_variable changed;
  std::string aborted;
  /// Rounds in progress, by group and sequence number: a rank's n-th
  /// collective over a group meets the other ranks' n-th.
  std::map<std::pair<std::vector<int>, int64_t>, std::shared_ptr<Round>> rounds;
  std::map<std::pair<int, std::vector<int>>, int64_t> nextRound;
  /// Messages sent and not yet received, by (from, to, tag), in order.
  std::map<std::tuple<int, int, int64_t>, std::deque<std::vector<char>>>
      mailbox;
  std::vector<CommCounters> perRank;
  std::vector<int> collectiveDevices;
  /// Rank's counter `field`; `spare` for a rank out of range (the
  /// collective then reports the bad rank).
  int64_t *counter(int rank, int64_t CommCounters::*field, int64_t &spare) {
    return rank >= 0 && rank < size_ ? &(perRank[rank].*field) : &spare;
  }
};

} // namespace whale::rt

#endif
