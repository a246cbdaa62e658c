//===- CpuPlacement.cpp - the cores a run's CPU ranks use -----------------===//

#include "runtime/core/CpuPlacement.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <utility>

namespace whale::rt {

std::vector<int> placementOrder(const std::vector<LogicalCpu> &cpus) {
  // Each core's hardware threads, cores in order of their first CPU.
  std::vector<LogicalCpu> sorted = cpus;
  std::sort(
      sorted.begin(), sorted.end(),
      [](const LogicalCpu &a, const LogicalCpu &b) { return a.cpu < b.cpu; });
  std::vector<int> coreOrder;
  std::map<int, std::vector<int>> threadsOf;
  for (const LogicalCpu &c : sorted) {
    if (!threadsOf.count(c.core))
      coreOrder.push_back(c.core);
    threadsOf[c.core].push_back(c.cpu);
  }
  std::vector<int> order;
  for (size_t round = 0; order.size() < sorted.size(); ++round)
    for (int core : coreOrder)
      if (round < threadsOf[core].size())
        order.push_back(threadsOf[core][round]);
  return order;
}

namespace {

/// The integer in a one-line sysfs file, or -1.
int readNumber(const std::string &path) {
  std::ifstream in(path);
  int n = -1;
  if (!(in >> n))
    return -1;
  return n;
}

} // namespace

std::vector<LogicalCpu> usableCpus() {
  std::vector<LogicalCpu> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  // The main thread's: the process's own, whichever thread asks.
  if (sched_getaffinity(getpid(), sizeof set, &set) != 0)
    return out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set))
      continue;
    const std::string topo =
        "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    int core = readNumber(topo + "core_id"),
        package = readNumber(topo + "physical_package_id");
    // Unknown: a core of its own (beyond any real core's number).
    out.push_back({cpu, core < 0 || package < 0 ? (1 << 20) + cpu
                                                : package * 65536 + core});
  }
  return out;
}

std::vector<std::vector<int>> placeThreads(const std::vector<int> &threads,
                                           const std::vector<int> &order) {
  std::vector<std::vector<int>> out(threads.size());
  size_t total = 0;
  for (int t : threads)
    total += static_cast<size_t>(std::max(0, t));
  if (total == 0 || total > order.size())
    return out;
  size_t next = 0;
  for (size_t d = 0; d < threads.size(); ++d)
    for (int i = 0; i < threads[d]; ++i)
      out[d].push_back(order[next++]);
  return out;
}

std::vector<std::vector<int>> placeRankThreads(const std::vector<int> &threads,
                                               bool underLauncher) {
  const char *env = std::getenv("WHALE_PIN_THREADS");
  if (underLauncher || !env || std::strcmp(env, "1") != 0)
    return std::vector<std::vector<int>>(threads.size());
  return placeThreads(threads, placementOrder(usableCpus()));
}

namespace {

bool pin(pthread_t thread, int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE)
    return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(thread, sizeof set, &set) == 0;
}

} // namespace

bool pinThread(std::thread &thread, int cpu) {
  return pin(thread.native_handle(), cpu);
}

bool pinThisThread(int cpu) { return pin(pthread_self(), cpu); }

bool unpinThisThread() {
  cpu_set_t set;
  CPU_ZERO(&set);
  // The thread group's leader: the main thread, which Whale never binds.
  return sched_getaffinity(getpid(), sizeof set, &set) == 0 &&
         pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

} // namespace whale::rt
