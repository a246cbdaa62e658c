//===- RankThreads.cpp - one thread per rank, kept from step to step ------===//

#include "runtime/run/RankThreads.h"

#include <string>
#include <system_error>

namespace whale {

RankThreads::~RankThreads() { stopAll(); }

void RankThreads::stopAll() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  for (std::thread &t : threads)
    t.join();
  threads.clear();
  stopping = false;
}

void RankThreads::loop(size_t index, uint64_t seen) {
  for (;;) {
    const std::function<void(size_t)> *work = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex);
      wake.wait(lock, [&] { return stopping || round != seen; });
      if (stopping)
        return;
      seen = round;
      work = job;
    }
    (*work)(index);
    std::lock_guard<std::mutex> lock(mutex);
    if (--pending == 0)
      finished.notify_all();
  }
}

std::string RankThreads::run(size_t n,
                             const std::function<void(size_t)> &work) {
  if (threads.size() != n) {
    // Another plan's ranks: a thread per rank of this one.
    stopAll();
    for (size_t i = 0; i < n; ++i) {
      try {
        // The round it starts after, read here: a thread that read it
        // itself could do so after this round began, and miss it.
        threads.emplace_back([this, i, at = round] { loop(i, at); });
      } catch (const std::system_error &e) {
        const size_t started = threads.size();
        stopAll();
        return "cannot start the thread of rank " + std::to_string(started) +
               " (" + std::to_string(n) + " ranks): " + e.what();
      }
    }
  }
  std::unique_lock<std::mutex> lock(mutex);
  job = &work;
  pending = n;
  ++round;
  wake.notify_all();
  finished.wait(lock, [&] { return pending == 0; });
  job = nullptr;
  return "";
}

} // namespace whale
