//===- CpuPlacementTest.cpp - ranks' threads on cores of their own --------===//
//
// The order threads are placed in (a hardware thread of every core before
// a second of any), the slices each device gets, placement only when
// asked (WHALE_PIN_THREADS=1) and refused where the threads do not fit or
// a launcher binds the processes, and a pool's workers bound where they
// are told.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/CpuPlacement.h"
#include "runtime/core/ThreadPool.h"

#include <gtest/gtest.h>

#include <sched.h>

#include <cstdlib>
#include <mutex>
#include <set>

namespace whale::rt {
namespace {

TEST(CpuPlacement, EveryCoreGetsAThreadBeforeAnyGetsItsSecond) {
  // Linux numbers a core's two hardware threads n and n + cores on most
  // x86 machines: 0 and 4 share core 0 here, 1 and 5 core 1, and so on.
  std::vector<LogicalCpu> cpus;
  for (int cpu = 0; cpu < 8; ++cpu)
    cpus.push_back({cpu, cpu % 4});
  EXPECT_EQ(placementOrder(cpus), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  // Siblings numbered side by side (0 and 1 share a core).
  cpus.clear();
  for (int cpu = 0; cpu < 6; ++cpu)
    cpus.push_back({cpu, cpu / 2});
  EXPECT_EQ(placementOrder(cpus), (std::vector<int>{0, 2, 4, 1, 3, 5}));
  // A process allowed only some CPUs, listed out of order.
  EXPECT_EQ(placementOrder({{7, 3}, {2, 1}, {3, 1}, {6, 3}}),
            (std::vector<int>{2, 6, 3, 7}));
  EXPECT_TRUE(placementOrder({}).empty());
}

TEST(CpuPlacement, DevicesTakeConsecutiveSlicesOrNoneWhereTheyDoNotFit) {
  const std::vector<int> order = {0, 2, 4, 1, 3, 5};
  EXPECT_EQ(placeThreads({2, 1, 0, 3}, order),
            (std::vector<std::vector<int>>{{0, 2}, {4}, {}, {1, 3, 5}}));
  // Seven threads on six CPUs: the scheduler places them.
  EXPECT_EQ(placeThreads({4, 3}, order),
            (std::vector<std::vector<int>>{{}, {}}));
  EXPECT_EQ(placeThreads({0, 0}, order),
            (std::vector<std::vector<int>>{{}, {}}));
}

TEST(CpuPlacement, OnlyAskedForAndNeverUnderALauncher) {
  ::unsetenv("WHALE_PIN_THREADS");
  EXPECT_EQ(placeRankThreads({1}, false), (std::vector<std::vector<int>>{{}}));
  ::setenv("WHALE_PIN_THREADS", "0", 1);
  EXPECT_EQ(placeRankThreads({1}, false), (std::vector<std::vector<int>>{{}}));
  ::setenv("WHALE_PIN_THREADS", "1", 1);
  EXPECT_EQ(placeRankThreads({1}, /*underLauncher=*/true),
            (std::vector<std::vector<int>>{{}}));
  // This machine's own: one thread fits wherever the test runs.
  std::vector<std::vector<int>> one = placeRankThreads({1}, false);
  ::unsetenv("WHALE_PIN_THREADS");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].size(), 1u);
}

TEST(CpuPlacement, APoolsWorkersRunOnTheCpusTheyAreBoundTo) {
  std::vector<LogicalCpu> usable = usableCpus();
  ASSERT_FALSE(usable.empty());
  const int cpu = usable.back().cpu;
  ThreadPool pool(3);
  ASSERT_TRUE(pool.pinWorkers({-1, cpu, cpu}));
  EXPECT_FALSE(pool.pinWorkers({cpu})); // fewer CPUs than workers
  std::mutex mutex;
  std::set<int> seen;
  pool.parallelFor(3, 1, [&](int64_t begin, int64_t) {
    if (begin == 0)
      return; // the caller's chunk: not bound here
    std::lock_guard<std::mutex> lock(mutex);
    seen.insert(sched_getcpu());
  });
  EXPECT_EQ(seen, (std::set<int>{cpu}));
  // A thread bound and let go runs on the process's CPUs again.
  std::thread t([&] {
    ASSERT_TRUE(pinThisThread(cpu));
    EXPECT_EQ(sched_getcpu(), cpu);
    ASSERT_TRUE(unpinThisThread());
    cpu_set_t set;
    CPU_ZERO(&set);
    ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    EXPECT_EQ(CPU_COUNT(&set), static_cast<int>(usable.size()));
  });
  t.join();
}

} // namespace
} // namespace whale::rt
