//===- ThreadPool.cpp - a device's own worker threads ---------------------===//

#include "runtime/ThreadPool.h"

#include <algorithm>
#include <system_error>

namespace whale::rt {

// A loop started from inside a worker (a kernel calling a kernel) runs
// inline on that worker rather than waiting for itself.
static thread_local const ThreadPool *insidePool = nullptr;

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

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  for (std::thread &t : workers)
    t.join();
}

static void chunkRange(int64_t n, int64_t chunks, int64_t index, int64_t &begin,
                       int64_t &end) {
  int64_t base = n / chunks, extra = n % chunks;
  begin = index * base + std::min(index, extra);
  end = begin + base + (index < extra ? 1 : 0);
}

void ThreadPool::workerLoop(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)> *fn;
    int64_t n, count;
    {
      std::unique_lock<std::mutex> lock(mutex);
      wake.wait(lock, [&] { return stopping || generation != seen; });
      if (stopping)
        return;
      seen = generation;
      fn = job;
      n = jobSize;
      count = chunks;
    }
    if (index < count) {
      int64_t begin, end;
      chunkRange(n, count, index, begin, end);
      insidePool = this;
      if (begin < end)
        (*fn)(begin, end);
      insidePool = nullptr;
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (--pending == 0)
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
  {
    std::lock_guard<std::mutex> lock(mutex);
    job = &fn;
    jobSize = n;
    chunks = count;
    pending = static_cast<int>(workers.size());
    ++generation;
  }
  wake.notify_all();
  int64_t begin, end;
  chunkRange(n, count, 0, begin, end);
  insidePool = this;
  fn(begin, end);
  insidePool = nullptr;
  std::unique_lock<std::mutex> lock(mutex);
  done.wait(lock, [&] { return pending == 0; });
  job = nullptr;
}

} // namespace whale::rt
