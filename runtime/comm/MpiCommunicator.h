//===- MpiCommunicator.h - collectives among ranks in processes --*- C++
//-*-===//
//
// Ranks that are processes started by `mpirun` (or Slurm's `srun`): one
// rank per process, the rank its MPI world rank, or several (threads) per
// process, rank r in process r / perProcess (MpiSharedRanks.h: they meet
// in their process and its leader exchanges for them). Collectives run over an
// MPI communicator per group (made once, on the group's first use), as
// non-blocking calls waited for with the same bound and abort as the
// in-process transport. Sums are taken here, each element by one member
// from every member's copy in group order (all-to-all, add, all-gather for
// an all-reduce: a ring's traffic; all-to-all and add for reduce-scatter),
// so a plan gets the same bits under mpirun as in one process. A group
// whose processes share one host moves the data of its all-reduces,
// reductions, gathers and reduce-scatters through a shared-memory segment
// of its own instead (SharedMemoryGroup.h: the same sums in the same
// order, without the staging copy MPI's calls need for safety);
// WHALE_MPI_SHARED_MEMORY=0 keeps them on MPI.
//
// Built only where MPI is found (WHALE_HAVE_MPI); MPI must be initialized
// with at least MPI_THREAD_SERIALIZED before one is made.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_COMM_MPICOMMUNICATOR_H
#define WHALE_RUNTIME_COMM_MPICOMMUNICATOR_H

#include "runtime/comm/Communicator.h"

#include <atomic>
#include <memory>

namespace whale::rt {

class MpiCommunicator final : public Communicator {
public:
  /// Over MPI_COMM_WORLD, or over `*base` (an MPI_Comm of a host that is
  /// itself an MPI program), duplicated so that Whale's traffic never meets
  /// the host's. Null with `error` when MPI is not initialized.
  /// With `perProcess` > 1, each process holds that many consecutive
  /// ranks.
  static std::unique_ptr<MpiCommunicator>
  create(std::chrono::milliseconds timeout, std::string &error,
         const void *base = nullptr, int perProcess = 1);
  ~MpiCommunicator() override;

  /// This process's rank (among the processes).
  int rank() const;
  /// Ranks each process holds.
  int ranksPerProcess() const;
  /// Whether `group`'s collectives move through a shared-memory segment
  /// (its processes share one host; known from the group's first
  /// collective on).
  bool sharesMemory(const std::vector<int> &group) const;

  int size() const override;
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
  Status driverAllGather(int rank, const std::vector<int> &group, DType dtype,
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
  std::vector<int> lostProcesses() const override;
  void setCollectiveDevice(int rank, int device) override;
  int collectiveDevice(int rank) const override;
  bool concurrentCollectives() const override;

  struct Impl;

private:
  explicit MpiCommunicator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

/// A new communicator (heap-allocated MPI_Comm, for MpiCommunicator's
/// `base`) of the processes of `base` (null: the world) but `lost`, made
/// by the survivors alone (MPI_Comm_create_group is collective over its
/// group only, so a dead process does not hold it up); null with `error`.
void *survivorsComm(const void *base, const std::vector<int> &lost,
                    std::string &error);
/// Frees what survivorsComm made.
void freeSurvivorsComm(void *comm);

/// Whether this process was started by an MPI launcher (mpirun, srun):
/// its environment names a world of processes.
bool launchedByMpi();

/// MPI_Init_thread (once; MPI_THREAD_SERIALIZED at least), with this
/// process's rank and the size of the world (or of `*base`, an MPI_Comm).
Status initMpi(int &rank, int &size, const void *base = nullptr);
/// Every process's host name and core count, in rank order (MPI must be
/// initialized); false when it is not.
bool processAllocation(std::vector<std::string> &hosts, std::vector<int> &cores,
                       const void *base = nullptr);
/// MPI_Finalize, when this process initialized MPI and has not finalized.
void finalizeMpi();
/// MPI_Abort over the world.
void abortMpi(int code);

} // namespace whale::rt

#endif
