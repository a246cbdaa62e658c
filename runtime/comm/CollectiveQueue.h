//===- CollectiveQueue.h - collectives a rank runs while it computes -*- C++
//-*-===//
//
// The collectives a rank has started and not yet waited for. They run on
// a thread of the rank's own, one at a time, in the order they were
// started: every member of a group starts its collectives over the group
// in the same order (ranks of one role run the same program), so the n-th
// on one rank meets the n-th on the others, as blocking ones do. The rank's
// own thread goes on computing meanwhile, and waits for a collective only
// where it reads the result.
//
// A blocking collective over a group that has started ones pending must
// come after them (settle): the communicator pairs a group's collectives
// by their order.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_COMM_COLLECTIVEQUEUE_H
#define WHALE_RUNTIME_COMM_COLLECTIVEQUEUE_H

#include "runtime/core/Status.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace whale::rt {

class CollectiveQueue {
public:
  using Work = std::function<Status()>;

  CollectiveQueue() = default;
  CollectiveQueue(const CollectiveQueue &) = delete;
  CollectiveQueue &operator=(const CollectiveQueue &) = delete;
  /// Lets the running collective end (a failed peer ends it through the
  /// communicator's abort or timeout), drops those not begun, and joins.
  ~CollectiveQueue();

  /// Queues `work`, a collective over `group`; returns its id (from 1).
  int64_t start(std::vector<int> group, Work work);
  /// Blocks until collective `id` has run and returns its status; the id
  /// is forgotten then. An id not started, or already waited for, is an
  /// error.
  Status wait(int64_t id);
  /// Blocks until every collective started over `group` has run; the
  /// first failure among them is returned (they are still to be waited
  /// for).
  Status settle(const std::vector<int> &group);
  /// Started and not yet waited for.
  size_t pending() const;

private:
  struct Job {
    int64_t id;
    std::vector<int> group;
    Work work;
    bool done = false;
    Status status;
  };
  void run();

  mutable std::mutex mutex;
  std::condition_variable changed;
  /// In the order started; a job leaves when it is waited for.
  std::deque<std::shared_ptr<Job>> jobs;
  int64_t nextId = 1;
  bool stopping = false;
  std::thread worker; ///< started with the first collective
};

} // namespace whale::rt

#endif
