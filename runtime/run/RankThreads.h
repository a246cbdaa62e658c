//===- RankThreads.h - one thread per rank, kept from step to step -*- C++
//-*-===//
//
// A plan's ranks each run on a thread of their own. The runtime first
// started fresh threads every step and joined them at its end; a small
// step paid for that: `whale run examples/mlp.whl --cluster
// cpu:2@threads=1` took 331-377 us a step that way and 200-254 us with
// threads kept for the whole run (474-558 against 307-365 us on
// cpu:4@threads=1), on a 2-core VM. Rank i always runs on thread i.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_RUN_RANKTHREADS_H
#define WHALE_RUNTIME_RUN_RANKTHREADS_H

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace whale {

class RankThreads {
public:
  RankThreads() = default;
  RankThreads(const RankThreads &) = delete;
  RankThreads &operator=(const RankThreads &) = delete;
  ~RankThreads();

  /// Runs work(i) for every i in [0, n), each on thread i, and returns when
  /// all are done. Threads are started as needed (and the surplus ended
  /// when fewer are asked for); "" or why one could not start, in which
  /// case no work ran.
  std::string run(size_t n, const std::function<void(size_t)> &work);

private:
  /// Thread `index`: waits for each round after `seen` and does its part.
  void loop(size_t index, uint64_t seen);
  void stopAll();

  std::vector<std::thread> threads;
  std::mutex mutex;
  std::condition_variable wake, finished;
  const std::function<void(size_t)> *job = nullptr;
  uint64_t round = 0;
  size_t pending = 0;
  bool stopping = false;
};

} // namespace whale

#endif
