//===- CpuShareTest.cpp - a CPU device slowed by the kernel ---------------===//
//
// cpu:N@share=S is time the kernel takes away, not sleeps: a thread in a
// quarter share's group burns at most about a quarter of a core, however
// hard it spins, and the group's statistics show the kernel throttling
// it; a device's pool workers and its driving thread are in the group, a
// rank's collective thread is not.
// Where the CPU controller cannot be used the tests say why and skip.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/CpuShare.h"
#include "runtime/comm/CollectiveQueue.h"
#include "runtime/core/DevicePlugin.h"
#include "runtime/cpu/CpuDevice.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <fstream>
#include <string>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>

using namespace whale::rt;

namespace {

double threadCpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

/// Spins for `wall` seconds of wall time; the CPU time the thread got.
double spin(double wall) {
  const double cpu0 = threadCpuSeconds();
  const auto end =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(wall);
  volatile uint64_t x = 0;
  while (std::chrono::steady_clock::now() < end)
    for (int i = 0; i < 1000; ++i)
      x = x + i;
  return threadCpuSeconds() - cpu0;
}

/// The group's count of periods the kernel throttled it in.
int64_t throttledPeriods(const CpuShare &share) {
  std::ifstream in(share.path() + "/cpu.stat");
  std::string key;
  int64_t value = 0;
  while (in >> key >> value)
    if (key == "nr_throttled")
      return value;
  return -1;
}

TEST(CpuShare, AQuarterShareGetsAtMostAQuarterOfACore) {
  std::string why;
  std::unique_ptr<CpuShare> share = CpuShare::open(0.25, 1, why);
  if (!share)
    GTEST_SKIP() << "the kernel's CPU controller cannot be used here: " << why;
  double cpu = 0;
  const double wall = 1.0;
  std::thread t([&] {
    ASSERT_TRUE(CpuShare::enter(share.get()));
    cpu = spin(wall);
    ASSERT_TRUE(CpuShare::enter(nullptr));
  });
  t.join();
  // The quota is 25 ms of each 100 ms period; a period's overrun and the
  // first period's whole budget at most add one period's share.
  EXPECT_LT(cpu, 0.25 * wall + 0.1) << "cpu " << cpu << " s in " << wall;
  EXPECT_GT(cpu, 0.02) << "it ran";
  // Near its quota, the kernel held it back (on a machine busy enough
  // that the thread got less than its quota, it never reached it).
  if (cpu > 0.2 * wall) {
    EXPECT_GT(throttledPeriods(*share), 0);
  }
}

TEST(CpuShare, ADevicesWorkersAndItsDriverRunUnderItsShare) {
  // Skipped where no group can be made (no controller, no permission).
  std::string why;
  if (!CpuShare::open(0.25, 1, why))
    GTEST_SKIP() << "the kernel's CPU controller cannot be used here: " << why;
  std::unique_ptr<Device> device;
  Status st = openDevice("cpu:0@share=0.25", 2, 0, device);
  ASSERT_TRUE(st) << st.message();
  auto &cpu = static_cast<CpuDevice &>(*device);
  ASSERT_TRUE(cpu.share());
  // Each of the two threads (the driver and a worker) spins for a second
  // in one parallel loop: together at most about half a core's second.
  std::atomic<double> used{0};
  std::thread driver([&] {
    ASSERT_TRUE(device->enterFromThisThread());
    cpu.pool().parallelFor(2, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const double got = spin(1.0);
        double old = used.load();
        while (!used.compare_exchange_weak(old, old + got)) {
        }
      }
    });
  });
  driver.join();
  EXPECT_LT(used.load(), 0.25 * 2 * 1.0 + 0.2) << used.load();
  if (used.load() > 0.4) {
    EXPECT_GT(throttledPeriods(*cpu.share()), 0);
  }
  const std::string dir = cpu.share()->path();
  device.reset();
  // Closed: the group is gone with it.
  std::ifstream gone(dir + "/tasks");
  EXPECT_FALSE(gone.good()) << dir;
}

/// Whether thread `tid` of this process is in `share`'s group.
bool inGroup(const CpuShare &share, pid_t tid) {
  std::ifstream tasks(share.path() + "/tasks");
  for (pid_t t; tasks >> t;)
    if (t == tid)
      return true;
  return false;
}

// A rank's collective thread is started by the rank's thread, under its
// device's share where it has one (Linux threads start in their creator's
// group); it leaves: the all-reduce is not the device's compute, and under
// the quota it waited for the next period whenever the rank had spent the
// current one.
TEST(CpuShare, ACollectiveThreadStartedUnderAShareRunsOutsideIt) {
  std::string why;
  std::unique_ptr<CpuShare> share = CpuShare::open(0.25, 1, why);
  if (!share)
    GTEST_SKIP() << "the kernel's CPU controller cannot be used here: " << why;
  pid_t rank = 0, collective = 0;
  bool rankIn = false, collectiveIn = true;
  std::thread t([&] {
    ASSERT_TRUE(CpuShare::enter(share.get()));
    rank = static_cast<pid_t>(::syscall(SYS_gettid));
    rankIn = inGroup(*share, rank);
    CollectiveQueue queue;
    const int64_t id = queue.start({0}, [&] {
      collective = static_cast<pid_t>(::syscall(SYS_gettid));
      collectiveIn = inGroup(*share, collective);
      return Status::ok();
    });
    ASSERT_TRUE(queue.wait(id));
    ASSERT_TRUE(CpuShare::enter(nullptr));
  });
  t.join();
  EXPECT_TRUE(rankIn) << "the rank's thread " << rank;
  EXPECT_NE(collective, 0);
  EXPECT_FALSE(collectiveIn)
      << "the collective thread " << collective << " is in " << share->path();
}

TEST(CpuShare, ABadShareIsRefusedWithItsRange) {
  std::unique_ptr<Device> device;
  for (const char *name : {"cpu:0@share=0", "cpu:0@share=1.5",
                           "cpu:0@share=half", "cpu:0@share="}) {
    Status st = openDevice(name, 1, 0, device);
    EXPECT_FALSE(st) << name;
    EXPECT_NE(st.message().find("share must be a number above 0 and at most 1"),
              std::string::npos)
        << st.message();
  }
}

} // namespace
