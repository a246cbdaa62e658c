//===- ThreadPool.h - a device's own worker threads --------------*- C++
//-*-===//

#ifndef WHALE_RUNTIME_CORE_THREADPOOL_H
#define WHALE_RUNTIME_CORE_THREADPOOL_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <sys/types.h>
#include <thread>
#include <vector>

namespace whale::rt {

/// A fixed set of threads that run one parallel loop at a time. Each CPU
/// device owns one, so devices with different thread counts run side by side
/// in one process (the heterogeneous case) without sharing workers.
///
/// A training step runs a thousand or more loops, most of them short, one
/// right after another. Waking a sleeping thread costs tens of microseconds
/// on a virtual machine (its core may have been handed back), as much as a
/// short loop itself; so between loops the workers, and the caller waiting
/// for them, spin a short while (kSpinMicros) before they sleep.
class ThreadPool {
public:
  /// `threads` >= 1; the calling thread works too, so `threads - 1` are
  /// started.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int size() const { return numThreads; }

  /// Binds worker i to cpus[i] (i from 1; cpus[0] is the driving thread's,
  /// which the driver binds itself: CpuPlacement.h). False when cpus has
  /// too few entries or the system refuses one.
  bool pinWorkers(const std::vector<int> &cpus);

  /// The kernel's thread ids of the started workers (the driving thread's
  /// is not among them): what a cgroup's `tasks` file takes.
  std::vector<pid_t> workerThreadIds();

  /// Runs fn(begin, end) over [0, n) cut into contiguous chunks of at least
  /// `grain` items, one chunk per thread at most; returns when all are done.
  /// Small loops, and loops started from inside one, run inline. One thread
  /// drives a pool at a time: the rank that owns the device.
  void parallelFor(int64_t n, int64_t grain,
                   const std::function<void(int64_t, int64_t)> &fn);

  /// How long a waiting thread spins before it sleeps.
  static constexpr int64_t kSpinMicros = 50;

private:
  void workerLoop(int index);

  int numThreads;
  std::vector<std::thread> workers;
  std::mutex mutex;
  std::condition_variable wake, done, started;
  // The job: written by the driving thread before it publishes a new
  // generation, read by a worker after it sees that generation.
  const std::function<void(int64_t, int64_t)> *job = nullptr;
  int64_t jobSize = 0, chunks = 0;
  std::atomic<uint64_t> generation{0};
  std::atomic<int> pending{0};
  std::atomic<bool> stopping{false};
  int sleepers = 0;          ///< workers asleep on `wake` (under `mutex`)
  std::vector<pid_t> tids;   ///< workers' thread ids as they start (`mutex`)
  bool callerAsleep = false; ///< the driver asleep on `done` (under `mutex`)
};

} // namespace whale::rt

#endif
