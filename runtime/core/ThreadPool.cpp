//===- ThreadPool.cpp - a device's own worker threads ---------------------===//

#include "runtime/core/ThreadPool.h"

#include "runtime/core/CpuPlacement.h"

#include <algorithm>
#include <chrono>
#include <sys/syscall.h>
#include <system_error>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace whale::rt {

// A loop started from inside a worker (a kernel calling a kernel) runs
// inline on that worker rather than waiting for itself.
static thread_local const ThreadPool *insidePool = nullptr;

namespace {

/// Spins until `ready()` or kSpinMicros have passed; whether it is ready.
template <class Ready> bool spinUntil(Ready ready) {
  auto start = std::chrono::steady_clock::now();
  for (int i = 1;; ++i) {
    if (ready())
      return true;
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#else
    std::this_thread::yield();
#endif
    // The clock is read now and then: it costs more than a pause.
    if (i % 64 == 0 && std::chrono::steady_clock::now() - start >
                           std::chrono::microseconds(ThreadPool::kSpinMicros))
      return ready();
  }
}

void chunkRange(int64_t n, int64_t chunks, int64_t index, int64_t &begin,
                int64_t &end) {
  int64_t base = n / chunks, extra = n % chunks;
  begin = index * base + std::min(index, extra);
  end = begin + base + (index < extra ? 1 : 0);
}

} // namespace

ThreadPool::ThreadPool(int threads) : numThreads(std::max(1, threads)) {
  // The system may refuse threads (its limit, or memory for their stacks):
  // the pool then works with those it got, as a smaller pool would.
  for (int i = 1; i < numThreads; ++i) {
    try {
      workers.emplace_back([this, i] { workerLoop(i); });
    } catch (const std::system_error &) {
      // The started workers never read numThreads: no lock needed.
      numThreads = i;
      break;
    }
  }
}

bool ThreadPool::pinWorkers(const std::vector<int> &cpus) {
  if (cpus.size() < workers.size() + 1)
    return false;
  bool all = true;
  for (size_t i = 0; i < workers.size(); ++i)
    all = pinThread(workers[i], cpus[i + 1]) && all;
  return all;
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  for (std::thread &t : workers)
    t.join();
}

std::vector<pid_t> ThreadPool::workerThreadIds() {
  std::unique_lock<std::mutex> lock(mutex);
  started.wait(lock, [&] { return tids.size() == workers.size(); });
  return tids;
}

void ThreadPool::workerLoop(int index) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    tids.push_back(static_cast<pid_t>(::syscall(SYS_gettid)));
  }
  started.notify_all();
  uint64_t seen = 0;
  for (;;) {
    auto fresh = [&] {
      return stopping.load(std::memory_order_acquire) ||
             generation.load(std::memory_order_acquire) != seen;
    };
    if (!spinUntil(fresh)) {
      std::unique_lock<std::mutex> lock(mutex);
      ++sleepers;
      wake.wait(lock, fresh);
      --sleepers;
    }
    if (stopping.load(std::memory_order_acquire))
      return;
    seen = generation.load(std::memory_order_acquire);
    if (index < chunks) {
      int64_t begin, end;
      chunkRange(jobSize, chunks, index, begin, end);
      insidePool = this;
      if (begin < end)
        (*job)(begin, end);
      insidePool = nullptr;
    }
    if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mutex);
      if (callerAsleep)
        done.notify_one();
    }
  }
}

void ThreadPool::parallelFor(int64_t n, int64_t grain,
                             const std::function<void(int64_t, int64_t)> &fn) {
  if (n <= 0)
    return;
  int64_t count =
      std::min<int64_t>(numThreads, (n + std::max<int64_t>(grain, 1) - 1) /
                                        std::max<int64_t>(grain, 1));
  if (count <= 1 || workers.empty() || insidePool == this) {
    fn(0, n);
    return;
  }
  bool anyAsleep;
  {
    // Under the lock, so a worker about to sleep either sees the new
    // generation or is counted among the sleepers and woken.
    std::lock_guard<std::mutex> lock(mutex);
    job = &fn;
    jobSize = n;
    chunks = count;
    pending.store(static_cast<int>(workers.size()), std::memory_order_relaxed);
    generation.fetch_add(1, std::memory_order_release);
    anyAsleep = sleepers > 0;
  }
  if (anyAsleep)
    wake.notify_all();
  int64_t begin, end;
  chunkRange(n, count, 0, begin, end);
  insidePool = this;
  fn(begin, end);
  insidePool = nullptr;
  auto finished = [&] { return pending.load(std::memory_order_acquire) == 0; };
  if (!spinUntil(finished)) {
    std::unique_lock<std::mutex> lock(mutex);
    callerAsleep = true;
    done.wait(lock, finished);
    callerAsleep = false;
  }
}

} // namespace whale::rt
