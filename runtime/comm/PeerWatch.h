//===- PeerWatch.h - processes notice a peer process that died ----*- C++
//-*-===//
//
// MPI as Debian ships it (Open MPI 4.1, no ULFM) tells nobody when a
// process of the job dies: the others wait in their collectives until a
// launcher kills them, or until their timeout when it does not (`mpirun
// --enable-recovery`, Slurm without --kill-on-bad-exit, a host application
// that is its own MPI program). A PeerWatch gives every process a TCP
// connection to each other one (to its two ring neighbours beyond
// kMeshLimit processes) and a thread that watches them: a process that
// exits, however it exits, has its sockets closed by the kernel, so its
// peers read an end of file at once; a machine that vanishes stops the
// heartbeat each connection carries every second. Either way `onDeath`
// is called, once for each process lost, with its rank and a report that
// names its host and pid; an orderly end says goodbye first and is not a
// death.
//
// The endpoints are exchanged by the caller (over MPI, or any all-gather),
// so this file needs no MPI and is tested in one process.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_COMM_PEERWATCH_H
#define WHALE_RUNTIME_COMM_PEERWATCH_H

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace whale::rt {

/// Where a process listens, and who it is: fixed size, for an all-gather.
struct PeerEndpoint {
  char host[64] = {};    ///< the machine's name, for the report
  char address[46] = {}; ///< an IPv4 address the others can reach
  uint16_t port = 0;
  int32_t pid = 0;
};

class PeerWatch {
public:
  /// Beyond this many processes each watches its ring neighbours only (a
  /// process's file descriptors stay few); they report, and end the job.
  static constexpr int kMeshLimit = 64;

  /// Listens on an ephemeral port; `self` says where. False with `error`
  /// when no socket can be had.
  static std::unique_ptr<PeerWatch> listen(PeerEndpoint &self,
                                           std::string &error);
  ~PeerWatch();

  /// Connects to the peers this rank watches (`all` indexed by rank) and
  /// starts the watching thread. `silence`: how long a peer may send
  /// nothing before it counts as lost. Every process calls it after the
  /// same exchange.
  bool start(int rank, const std::vector<PeerEndpoint> &all,
             std::chrono::milliseconds silence,
             std::function<void(int lost, const std::string &report)> onDeath,
             std::string &error);

  /// Says goodbye to every peer and stops watching (the destructor does).
  void stop();
  /// Closes every connection without a goodbye, as a process that died
  /// would: for tests.
  void dropForTest();

  /// The ranks this rank watches, in order.
  std::vector<int> watched() const;

  struct Impl;

private:
  explicit PeerWatch(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace whale::rt

#endif
