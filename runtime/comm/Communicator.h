//===- Communicator.h - collectives among ranks ------------------*- C++
//-*-===//
//
// What ranks exchange: every collective over any group of ranks, and
// point-to-point messages. One interface, two transports: ranks that run
// as threads of one process share memory (InProcessCommunicator, here);
// ranks in different processes use MPI (MpiCommunicator). Every wait is
// bounded, so a plan that hangs (a rank that never arrives, a recv nobody
// sends to) becomes an error naming the op and the ranks instead of a
// frozen process.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_COMM_COMMUNICATOR_H
#define WHALE_RUNTIME_COMM_COMMUNICATOR_H

#include "runtime/core/HostBuffers.h"
#include "runtime/core/Status.h"
#include "runtime/core/Tensor.h"

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
          broadcastBytes = 0, sendBytes = 0, recvBytes = 0,
          allToAllBytes = 0; ///< what left the rank: (n - 1) of its n chunks
  /// What left the rank in reduces to owners: every part but its own.
  /// (broadcastBytes: a broadcast's buffer, and in a gather from owners
  /// the rank's own part once for each other member.)
  int64_t reduceToOwnersBytes = 0;
};

class Communicator {
public:
  virtual ~Communicator() = default;

  /// Ranks in all (of every process).
  virtual int size() const = 0;

  /// Collectives: every rank of `group` (ranks in the same order on each)
  /// calls the same op with the same dtype and count; `rank` is the caller.
  /// Results are computed in group order, so every rank gets the same bits.
  /// Sums `count` elements in place.
  virtual Status allReduce(int rank, const std::vector<int> &group, DType dtype,
                           void *data, int64_t count) = 0;
  /// Sums each member's part of `data` on that member alone (ZeRO's reduce
  /// of the gradients to the ranks that own them): `parts[k]` elements,
  /// one after another in member order, belong to the member at position
  /// k, which gets their sums in place, in group order (the all-reduce's
  /// bits). The caller's other parts are left unspecified: its own values,
  /// or the sums. This default all-reduces the whole, which is that too.
  virtual Status reduceToOwners(int rank, const std::vector<int> &group,
                                DType dtype, void *data,
                                const std::vector<int64_t> &parts);
  /// The inverse: each member's part of `data` (laid out as for
  /// reduceToOwners) copied from that member to every other, in place (an
  /// all-gather of parts of any size: ZeRO's updated parameters). This
  /// default broadcasts the parts one by one.
  virtual Status gatherFromOwners(int rank, const std::vector<int> &group,
                                  DType dtype, void *data,
                                  const std::vector<int64_t> &parts);
  /// `out` holds group.size() x count elements, rank group[i]'s at i.
  virtual Status allGather(int rank, const std::vector<int> &group, DType dtype,
                           const void *in, int64_t count, void *out) = 0;
  /// `in` holds group.size() x count elements; the caller at position i of
  /// the group gets the sum of every rank's i-th part.
  virtual Status reduceScatter(int rank, const std::vector<int> &group,
                               DType dtype, const void *in, int64_t count,
                               void *out) = 0;
  /// `in` holds group.size() x count elements, its i-th `count` for the
  /// member at position i; `out` gets, at position k, what member k sent
  /// the caller.
  virtual Status allToAll(int rank, const std::vector<int> &group, DType dtype,
                          const void *in, int64_t count, void *out) = 0;
  /// allGather for the driver's own exchanges (the losses of a step, a
  /// run's figures), not counted as the rank's traffic.
  virtual Status driverAllGather(int rank, const std::vector<int> &group,
                                 DType dtype, const void *in, int64_t count,
                                 void *out) {
    return allGather(rank, group, dtype, in, count, out);
  }
  /// `root`'s data is copied to every rank of the group.
  virtual Status broadcast(int rank, const std::vector<int> &group, int root,
                           DType dtype, void *data, int64_t count) = 0;

  /// Point to point. A send is buffered and returns at once; a recv waits
  /// for the message from `from` with the same tag, dtype and count.
  virtual Status send(int from, int to, int64_t tag, DType dtype,
                      const void *data, int64_t count) = 0;
  virtual Status recv(int to, int from, int64_t tag, DType dtype, void *data,
                      int64_t count) = 0;

  /// Ends every wait, now and later, with `reason`: when one rank fails the
  /// others stop instead of waiting out the timeout.
  virtual void abort(const std::string &reason) = 0;

  virtual CommCounters counters(int rank) const = 0;
  /// Takes `bytes` a rank sent back off its counters: the driver's own
  /// messages (state moved between steps) are not the ranks' traffic.
  virtual void uncountSent(int rank, int64_t bytes) = 0;

  /// The processes found dead (ranks as processes: their process numbers,
  /// in the order they were noticed); none in one process.
  virtual std::vector<int> lostProcesses() const { return {}; }

  /// What each rank's device offers for device-side collectives (see
  /// Device::collectiveDevice), recorded when the rank binds; kUnbound
  /// until then; kElsewhere for a rank of another process, whose device
  /// the group's members ask each other for when the group first meets.
  static constexpr int kUnbound = -2;
  static constexpr int kElsewhere = -3;
  virtual void setCollectiveDevice(int rank, int device) = 0;
  virtual int collectiveDevice(int rank) const = 0;

  /// Whether a rank may run collectives from two threads at once (over
  /// different groups, or over one group in the order every member keeps):
  /// a started all-reduce runs on a thread of its own only then, else it
  /// runs where it is started.
  virtual bool concurrentCollectives() const { return false; }
};

/// Whether the calling thread is a rank's collective thread (started
/// all-reduces run there, beside the rank's own work): a transport that
/// polls waits there without spinning, to leave the cores to the work.
bool onCollectiveThread();
void setOnCollectiveThread(bool on);

/// "0, 2, 5": a group's ranks as messages name them.
std::string rankList(const std::vector<int> &ranks);

/// Checks a collective's arguments alike for every transport: a non-empty
/// group of distinct ranks below `size` that holds `rank`.
Status checkGroup(const char *op, int size, int rank,
                  const std::vector<int> &group);

/// Checks the parts of a reduce to or gather from owners: one per member,
/// none negative.
/// `count` gets their total and `from` where the caller's own part starts.
Status checkParts(const std::vector<int> &group, int rank,
                  const std::vector<int64_t> &parts, int64_t &count,
                  int64_t &from);

/// out[0..count) = the sum over `ins`, in their order, of each one's
/// [offset, offset + count): the one order every transport sums in. `out`
/// may be one of the inputs when `offset` is 0.
void sumInGroupOrder(DType dtype, void *out,
                     const std::vector<const void *> &ins, int64_t offset,
                     int64_t count);

/// The ranks of one process, as its threads.
class InProcessCommunicator final : public Communicator {
public:
  InProcessCommunicator(int size, std::chrono::milliseconds timeout);

  int size() const override { return size_; }
  Status allReduce(int rank, const std::vector<int> &group, DType dtype,
                   void *data, int64_t count) override;
  Status reduceToOwners(int rank, const std::vector<int> &group, DType dtype,
                        void *data, const std::vector<int64_t> &parts) override;
  Status gatherFromOwners(int rank, const std::vector<int> &group,
                          DType dtype, void *data,
                          const std::vector<int64_t> &parts) override;
  Status allGather(int rank, const std::vector<int> &group, DType dtype,
                   const void *in, int64_t count, void *out) override;
  Status reduceScatter(int rank, const std::vector<int> &group, DType dtype,
                       const void *in, int64_t count, void *out) override;
  Status allToAll(int rank, const std::vector<int> &group, DType dtype,
                  const void *in, int64_t count, void *out) override;
  Status broadcast(int rank, const std::vector<int> &group, int root,
                   DType dtype, void *data, int64_t count) override;
  Status send(int from, int to, int64_t tag, DType dtype, const void *data,
              int64_t count) override;
  Status recv(int to, int from, int64_t tag, DType dtype, void *data,
              int64_t count) override;
  void abort(const std::string &reason) override;
  CommCounters counters(int rank) const override;
  void uncountSent(int rank, int64_t bytes) override;
  void setCollectiveDevice(int rank, int device) override;
  int collectiveDevice(int rank) const override;
  /// Rounds are matched by group and order under one lock.
  bool concurrentCollectives() const override { return true; }

private:
  struct Round;
  Status collective(const char *op, int rank, const std::vector<int> &group,
                    DType dtype, int64_t count, const void *in, void *out,
                    int64_t outCount, int root, int64_t *counter,
                    const std::vector<int64_t> *parts = nullptr);
  Status checkRanks(const char *op, int rank,
                    const std::vector<int> &group) const;
  /// A reduce to or gather from owners (`op`), counted in `field`.
  Status ownersCollective(const char *op, int64_t CommCounters::*field,
                          int rank, const std::vector<int> &group, DType dtype,
                          void *data, const std::vector<int64_t> &parts);

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
  std::map<std::tuple<int, int, int64_t>, std::deque<HostBuffers::Block>>
      mailbox;
  /// The messages' memory, reused from step to step.
  HostBuffers messages;
  std::vector<CommCounters> perRank;
  std::vector<int> collectiveDevices;
  /// The largest all-reduce buffer of a finished round, for the next.
  std::unique_ptr<char[]> spare;
  int64_t spareBytes = 0;
  /// Rank's counter `field`; `spare` for a rank out of range (the
  /// collective then reports the bad rank).
  int64_t *counter(int rank, int64_t CommCounters::*field, int64_t &spare) {
    return rank >= 0 && rank < size_ ? &(perRank[rank].*field) : &spare;
  }
};

} // namespace whale::rt

#endif
