//===- CpuPlacement.h - the cores a run's CPU ranks use ---------*- C++ -*-===//
//
// A plan's CPU ranks run as threads of one process: each rank's own thread
// and its device's pool workers. Left to the scheduler, where they land
// differs from process to process, and on a machine whose cores have two
// hardware threads each it matters: two busy threads on the two halves of
// one core each run about a third slower than on cores of their own. On a
// quiet 16-core machine a profiling run and a plain run of the same plan
// differed so by up to 30%, either way (issue 59). With
// WHALE_PIN_THREADS=1 a run places its ranks itself, the same way every
// time: each thread on a core of its own while there are cores, in the
// order of the devices, and the same order in a profile's timing of each
// op alone as in the run it predicts. bench/sim_accuracy.py sets it for
// both.
//
// It is not the default: two runs on one machine would both take its
// first cores and share them while the others idle (a test suite's
// workers, two jobs of one user), where the scheduler spreads them. And
// placement is left to the scheduler where the threads outnumber the
// CPUs this process may use, and under mpirun or srun, whose launcher
// binds the processes.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CORE_CPUPLACEMENT_H
#define WHALE_RUNTIME_CORE_CPUPLACEMENT_H

#include <thread>
#include <vector>

namespace whale::rt {

/// A logical CPU and the physical core it is a hardware thread of.
struct LogicalCpu {
  int cpu = 0;
  int core = 0; ///< unique over the machine's packages
};

/// The CPUs to place threads on, in order: one hardware thread of each
/// core first (cores in order of their first CPU), then the second of
/// each, and so on.
std::vector<int> placementOrder(const std::vector<LogicalCpu> &cpus);

/// The CPUs this process may use, with their cores, as Linux describes
/// them (sched_getaffinity, /sys/devices/system/cpu); each its own core
/// where the topology cannot be read.
std::vector<LogicalCpu> usableCpus();

/// Per device, the CPUs of its `threads[d]` threads (its rank's thread
/// first), consecutive in `order`; all empty where they do not fit.
std::vector<std::vector<int>> placeThreads(const std::vector<int> &threads,
                                           const std::vector<int> &order);

/// placeThreads over this machine's placementOrder(usableCpus()) with
/// WHALE_PIN_THREADS=1; all empty without it, or `underLauncher`.
std::vector<std::vector<int>> placeRankThreads(const std::vector<int> &threads,
                                               bool underLauncher);

/// Binds `thread` (pinThisThread: the calling thread) to `cpu`; false when
/// the system refuses (the thread then runs where it ran).
bool pinThread(std::thread &thread, int cpu);
bool pinThisThread(int cpu);
/// Lets the calling thread run on every CPU the process's main thread may.
bool unpinThisThread();

} // namespace whale::rt

#endif
