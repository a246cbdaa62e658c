//===- MpiSharedRanks.h - several ranks in each MPI process ------*- C++
//-*-===//
//
// The MPI transport when each process holds several ranks (threads): rank
// r lives in process r / perProcess. A group within this process runs on
// the in-process transport. A group that spans processes meets first
// within each process (its members there hand their buffers to the first
// of them, the leader), and the leaders exchange what their members hold
// by MPI messages: every element of a sum is still added by one process
// from every member's copy in group order, so the bits are those of one
// process. Point-to-point messages between processes carry their sender,
// receiver and tag.
//
// The leaders of several groups may exchange at once from one process, so
// nothing here blocks inside MPI: messages are non-blocking sends and
// probed receives (one MPI call at a time, under one lock), matched by a
// key in their first bytes. No per-group MPI communicator is made, whose
// creation would block each process's threads in turn.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_COMM_MPISHAREDRANKS_H
#define WHALE_RUNTIME_COMM_MPISHAREDRANKS_H

#include "runtime/comm/Communicator.h"

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <vector>

namespace whale::rt {

class MpiSharedRanks {
public:
  /// Over `world` (this process is `process` of `processes`), each process
  /// holding `perProcess` ranks. `world` stays the caller's.
  MpiSharedRanks(MPI_Comm world, int process, int processes, int perProcess,
                 std::chrono::milliseconds timeout);
  ~MpiSharedRanks();

  int size() const { return processes * perProcess; }
  int ownerOf(int rank) const { return rank / perProcess; }
  bool isLocal(int rank) const {
    return rank >= 0 && rank < size() && ownerOf(rank) == process;
  }

  Status allReduce(int rank, const std::vector<int> &group, DType dtype,
                   void *data, int64_t count);
  Status allGather(int rank, const std::vector<int> &group, DType dtype,
                   const void *in, int64_t count, void *out, bool counted);
  Status reduceScatter(int rank, const std::vector<int> &group, DType dtype,
                       const void *in, int64_t count, void *out);
  Status allToAll(int rank, const std::vector<int> &group, DType dtype,
                  const void *in, int64_t count, void *out);
  Status broadcast(int rank, const std::vector<int> &group, int root,
                   DType dtype, void *data, int64_t count);
  Status send(int from, int to, int64_t tag, DType dtype, const void *data,
              int64_t count);
  Status recv(int to, int from, int64_t tag, DType dtype, void *data,
              int64_t count);
  void abort(const std::string &reason);
  CommCounters counters(int rank) const;
  void uncountSent(int rank, int64_t bytes);
  void setCollectiveDevice(int rank, int device);
  int collectiveDevice(int rank) const;

  /// What a message is: its kind, ranks and numbers, compared whole.
  struct Key {
    int32_t kind = 0, from = -1, to = -1, phase = 0;
    uint64_t a = 0, b = 0;
    bool operator<(const Key &o) const;
  };

private:
  /// One collective of a group, as this process's members meet for it.
  struct Round {
    std::vector<const void *> in;
    std::vector<void *> out;
    int arrived = 0;
    bool done = false;
    Status status;
  };
  /// The group as processes: each position's process (index into procs)
  /// and place among that process's members.
  struct Shape {
    std::vector<int> procs, procOf, slot;
    std::vector<std::vector<int>> members; ///< positions, per process
    int me = -1;                           ///< this process's index
  };
  using Work = std::function<Status(const Shape &, Round &, uint64_t)>;

  Shape shapeOf(const std::vector<int> &group) const;
  /// Meets this process's other members of `group`; the first of them runs
  /// `work` for all (with the round's number) and every member returns
  /// its status.
  Status meet(const std::string &where, int rank,
              const std::vector<int> &group, const void *in, void *out,
              const Work &work);
  /// Pieces of a message: where, and how many bytes.
  using Pieces = std::vector<std::pair<const void *, int64_t>>;
  Status post(int toProcess, const Key &key, const Pieces &pieces);
  /// Sends every other process of the group its pieces and takes what
  /// each sends (of the size expected from it).
  Status swap(const Shape &s, const Key &key,
              const std::function<Pieces(int)> &piecesFor,
              const std::function<int64_t(int)> &expected,
              std::vector<std::vector<char>> &got, const std::string &where);
  /// Chunk `pos` (of `bytes`) of every member's input to the member at
  /// position pos, across processes: `finish(out, ins)` gets each member's
  /// output and every member's chunk for it in group order, and `counted`
  /// bytes go to each member's `field` counter.
  using Chunks = std::function<void(void *, const std::vector<const void *> &)>;
  Status exchangeChunks(const std::string &where, int rank,
                        const std::vector<int> &group, const void *in,
                        void *out, int64_t bytes, const Chunks &finish,
                        int64_t CommCounters::*field, int64_t counted);
  Status take(int fromProcess, const Key &key, std::vector<char> &message,
              const std::string &where);
  Status checkCall(const char *op, int rank, const std::vector<int> &group,
                   std::string &where) const;
  Key collectiveKey(const std::vector<int> &group, uint64_t round,
                    int phase) const;
  Key messageKey(int from, int to, int64_t tag) const;
  void reap();
  std::string abortReason() const;

  MPI_Comm world;
  int process, processes, perProcess;
  std::chrono::milliseconds timeout;
  InProcessCommunicator local;

  /// MPI calls, the mailbox and sends in flight: one at a time.
  mutable std::mutex mpi;
  std::map<std::pair<int, Key>, std::deque<std::vector<char>>> mailbox;
  struct Pending {
    MPI_Request request;
    std::vector<char> buffer;
  };
  std::deque<Pending> pending;

  /// The members' meetings, by group and round; each rank's next round.
  mutable std::mutex meetings;
  std::condition_variable met;
  std::map<std::pair<std::vector<int>, int64_t>, std::shared_ptr<Round>>
      rounds;
  std::map<std::pair<int, std::vector<int>>, int64_t> nextRound;

  std::atomic<bool> isAborted{false};
  mutable std::mutex abortMutex;
  std::string aborted;
  std::vector<CommCounters> perRank; ///< under `meetings`
};

/// Hands `buffer` to MPI for the rest of the process. A request a wait has
/// given up on still holds the buffer's address: MPI allows neither
/// cancelling nor freeing a non-blocking collective's request, Open MPI
/// cannot stop a receive whose sender died, and members that come late
/// still complete the collective there. So the buffer is never freed or
/// reused; a given-up wait ends the run or starts a recovery, so this
/// keeps one call's buffers a failure.
void handToMpiForGood(std::vector<char> buffer);

/// How a polled receive ended.
enum class ReceiveEnd { Done, Aborted, Late };

/// Receives the message of `size` bytes whose envelope MPI_Iprobe found
/// from `from` with `tag` on `comm`, into `out`. Polled, never a blocking
/// MPI_Recv: the envelope of a large message comes before its data, and if
/// the sender dies in between, Open MPI's receive never ends (its
/// shared-memory copy fails, "Read -1, expected N, errno = 3"), holding
/// this process out of the survivors' recovery. `lock` (held on entry and
/// on return) is let go between polls so that other threads' messages go
/// on; the receive is left when `aborted` is set (the peer watch saw a
/// process die) or `deadline` passes, its request and buffer then kept for
/// the rest of the process, unused, since MPI may still write into it.
ReceiveEnd receiveWhole(MPI_Comm comm, int from, int tag, int size,
                        std::vector<char> &out,
                        std::unique_lock<std::mutex> &lock,
                        const std::atomic<bool> &aborted,
                        std::chrono::steady_clock::time_point deadline);

} // namespace whale::rt

#endif
