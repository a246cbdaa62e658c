//===- CpuShare.h - a CPU device slowed by the kernel, by a known factor -*- C++
//-*-===//
//
// `cpu:N@share=S`: the device's threads may use S of the time of a core
// each, enforced by the kernel's CPU controller, not by sleeps in Whale's
// code: the threads join a cgroup of their own whose quota is S x threads
// x the period (cgroup v1's cpu.cfs_quota_us and cpu.cfs_period_us, per
// thread through its `tasks` file: ranks are threads of one process). A
// device of unequal speed, for real, on a machine whose cores are alike:
// what hardware-aware balancing is measured on (issue 88).
//
// The group is made when the device is opened, under the cgroup this
// process's cpu controller places it in, named for the process and the
// device; its pool's workers join it then, and a thread that drives the
// device joins when it says so (whale_rt_context_enter: each rank's thread
// before its step; a thread that then drives a device without a share goes
// back), not the thread that only makes its tensors or reads its results. When
// the device closes, the threads that joined go back and the group is removed;
// a process that died leaves its groups, which the next one removes. Where the
// controller cannot be used (no cgroup v1 cpu hierarchy mounted, no
// permission), opening the device fails with the reason: a share is never
// silently ignored.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CORE_CPUSHARE_H
#define WHALE_RUNTIME_CORE_CPUSHARE_H

#include "runtime/core/Status.h"

#include <memory>
#include <string>
#include <sys/types.h>

namespace whale::rt {

class CpuShare {
public:
  /// A group allowing `share` (0 < share <= 1) of a core to each of
  /// `threads` threads; null with the reason in `error` where the kernel's
  /// controller cannot give it.
  static std::unique_ptr<CpuShare> open(double share, int threads,
                                        std::string &error);
  ~CpuShare();
  CpuShare(const CpuShare &) = delete;
  CpuShare &operator=(const CpuShare &) = delete;

  /// Moves thread `tid` into the group.
  Status join(pid_t tid);

  /// Puts the calling thread in `share`'s group, or (null) back where the
  /// process's threads start, where it is elsewhere now. Cheap when it is
  /// there already: a thread-local comparison.
  static Status enter(CpuShare *share);

  /// For a thread just started: puts it back where the process's threads
  /// start, where it was started by a thread under a share (Linux threads
  /// start in their creator's group). A thread that is not the device's
  /// work calls it first: a rank's collective thread, whose share of the
  /// all-reduce a slower device's compute does not slow (under the quota
  /// it waited for the next period whenever the rank's compute had spent
  /// this one, up to 75 ms, and the other rank with it).
  static void leaveInherited();

  /// The group's directory.
  const std::string &path() const { return dir; }
  /// Where this process's groups are made (whale-<pid>-<n> under it).
  static std::string home();

  /// The share the kernel enforces now: the group's quota over its period
  /// and threads, read from its files (someone who rewrites them changes
  /// the device's speed; 1 where the quota is lifted, -1 where they cannot
  /// be read).
  double enforced() const;

private:
  CpuShare(std::string dir, int number, int threads)
      : dir(std::move(dir)), number(number), threads(threads) {}
  std::string dir; ///< the group's
  int number;      ///< unique in the process
  int threads;     ///< the quota is a share of this many cores
};

} // namespace whale::rt

#endif
