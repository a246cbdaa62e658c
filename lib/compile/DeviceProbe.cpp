//===- DeviceProbe.cpp - measuring a device's compute rate ----------------===//

#include "lib/compile/DeviceProbe.h"

#include "lib/compile/Cluster.h"
#include "perfmodel/DeviceModel.h"
#include "runtime/WhaleRuntime.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <vector>

namespace whale {

namespace {

/// `device` opened and entered by this thread (under a share it runs under
/// the quota, as a rank's thread does; closing the device puts it back).
using Context = std::unique_ptr<whale_rt_context, void (*)(whale_rt_context *)>;
Context openDevice(const std::string &device, int threads, std::string &error) {
  whale_rt_context *opened = nullptr;
  char why[640] = "";
  if (whale_rt_context_open(device.c_str(), threads, 0, 0, &opened, why,
                            sizeof why) != WHALE_RT_OK) {
    error = "cannot open " + device + ": " + why;
    return Context(nullptr, whale_rt_context_destroy);
  }
  Context ctx(opened, whale_rt_context_destroy);
  if (whale_rt_context_enter(ctx.get()) != WHALE_RT_OK) {
    error = whale_rt_last_error(ctx.get());
    return Context(nullptr, whale_rt_context_destroy);
  }
  return ctx;
}

/// `count` n x m f32 tensors of `ctx`, each filled with `value`.
bool makeTensors(whale_rt_context *ctx, int64_t n, int64_t m, float value,
                 std::vector<whale_rt_tensor *> &out, size_t count,
                 std::string &error) {
  int64_t shape[2] = {n, m};
  for (size_t i = 0; i < count; ++i) {
    whale_rt_tensor *t = nullptr;
    if (whale_rt_tensor_create(ctx, WHALE_RT_F32, 2, shape, &t) !=
        WHALE_RT_OK) {
      error = whale_rt_last_error(ctx);
      return false;
    }
    whale_rt_fill(ctx, t, value);
    out.push_back(t);
  }
  return true;
}

/// How many times the kernel has throttled the CPU share group at `group`
/// (cgroup v1's cpu.stat nr_throttled); -1 where it cannot be read.
long long timesThrottled(const std::string &group) {
  std::ifstream stat(group + "/cpu.stat");
  std::string key;
  long long value;
  while (stat >> key >> value)
    if (key == "nr_throttled")
      return value;
  return -1;
}

/// A CPU share group's period in seconds (cgroup v1's cpu.cfs_period_us),
/// 0 where it cannot be read.
double quotaPeriod(const std::string &group) {
  std::ifstream file(group + "/cpu.cfs_period_us");
  long long micros = 0;
  return file >> micros && micros > 0 ? double(micros) * 1e-6 : 0;
}

/// Seconds the threads of the CPU share group at `group` have run, summed
/// (the kernel's schedstat of each thread in its `tasks`, to the
/// nanosecond); -1 where they cannot be read.
double groupCpuSeconds(const std::string &group) {
  std::ifstream tasks(group + "/tasks");
  double ns = 0;
  bool any = false;
  for (long long tid; tasks >> tid;) {
    std::ifstream stat("/proc/" + std::to_string(tid) + "/schedstat");
    double ran = 0;
    if (!(stat >> ran))
      return -1;
    ns += ran;
    any = true;
  }
  return any ? ns * 1e-9 : -1;
}

/// What timing a probe's runs found.
struct Timing {
  double best = 0; ///< the fastest run's rate, work units a second
  double mean = 0; ///< all runs' work over their time
  /// Under a quota: the part of its threads' time the device ran, over
  /// whole periods of the quota.
  double fraction = 0;
};

/// Times `run` (which does `work` units and reads back one value, so a
/// GPU's queue has drained) over about `seconds`, after one warm-up run
/// (first-touch costs).
///
/// Under a quota (`throttled` counts the kernel's throttles of the
/// device's `threads` threads' group, -1 without one; `cpu` the seconds
/// they have run; `period` the quota's), until the kernel has throttled
/// three runs, and the part of the time they ran over whole periods: the
/// kernel lets a throttled group run again as a period starts, so a
/// throttled run ends r after a period's start, having run all of that r.
/// Between the ends of the first and the last throttled run lie k periods
/// and r_last - r_first, which the time between them, rounded to periods,
/// gives (the runs are short against a period); the threads ran that much
/// less in the k periods. Their running time, not their work: the work
/// also follows how fast the machine runs from second to second (a
/// quarter share's work under its quota over its work unthrottled, taken
/// alike, was 0.242 to 0.264 of it in twelve probes).
///
/// Empty (all 0) where a run fails or (under a quota) the kernel never
/// throttled the runs.
template <class Run, class Throttled, class Cpu>
Timing timeRuns(double work, double seconds, int threads, double period,
                Run run, Throttled throttled, Cpu cpu) {
  using Clock = std::chrono::steady_clock;
  auto over = [](Clock::time_point from, Clock::time_point to) {
    return std::max(1e-9, std::chrono::duration<double>(to - from).count());
  };
  const bool quota = throttled() >= 0;
  Timing t;
  double done = 0, cpuAtFirst = 0, cpuAtLast = 0;
  const Clock::time_point start = Clock::now();
  Clock::time_point warm, first, last;
  int released = 0;
  for (int i = 0;; ++i) {
    const long long before = quota ? throttled() : 0;
    const Clock::time_point t0 = Clock::now();
    if (!run())
      return Timing();
    // The count before the clock: a run the count says was throttled ends,
    // by the clock, after the kernel let it run again.
    const bool wasThrottled = quota && throttled() > before;
    const Clock::time_point t1 = Clock::now();
    if (i == 0) {
      warm = t1;
    } else {
      t.best = std::max(t.best, work / over(t0, t1));
      done += work;
      if (wasThrottled) {
        const double ran = cpu();
        if (released++ == 0) {
          first = t1;
          cpuAtFirst = ran;
        }
        last = t1;
        cpuAtLast = ran;
      }
    }
    const double elapsed = over(start, t1);
    if (i >= 3 && elapsed > seconds && (!quota || released >= 3))
      break;
    if (quota && elapsed > 4 * seconds)
      return Timing();
  }
  t.mean = done / over(warm, Clock::now());
  if (quota) {
    const double between = over(first, last);
    const double periods = std::max(1.0, std::round(between / period));
    const double ran =
        (cpuAtLast - cpuAtFirst) - threads * (between - periods * period);
    t.fraction = std::clamp(ran / (threads * periods * period), 0.0, 1.0);
  }
  return t;
}

/// The timing of `op` (the context and three n x m f32 tensors; `work`
/// units a run) on `device`, as timeRuns measures it (under the quota of
/// the device's CPU share where `underShare`); its result's first value
/// read back after each run. Empty with `error` set where it fails.
template <class Op>
Timing probeOp(const std::string &device, int threads, int64_t n, int64_t m,
               double work, double seconds, bool underShare, std::string &error,
               Op op) {
  Context ctx = openDevice(device, threads, error);
  if (!ctx)
    return Timing();
  std::vector<whale_rt_tensor *> t;
  if (!makeTensors(ctx.get(), n, m, 0.5f, t, 3, error))
    return Timing();
  std::string group;
  double period = 0;
  if (underShare) {
    double share = 1;
    char dir[512] = "";
    if (whale_rt_context_cpu_share(ctx.get(), &share, dir, sizeof dir) !=
            WHALE_RT_OK ||
        !*dir || timesThrottled(dir) < 0 ||
        !((period = quotaPeriod(dir)) > 0) || groupCpuSeconds(dir) < 0) {
      error = device + " is under no CPU share whose throttling can be read";
      return Timing();
    }
    group = dir;
  }
  const Timing timing = timeRuns(
      work, seconds, threads, period,
      [&] {
        float first;
        if (op(ctx.get(), t) == WHALE_RT_OK &&
            whale_rt_tensor_read(ctx.get(), t[2], &first, sizeof first) ==
                WHALE_RT_OK)
          return true;
        error = whale_rt_last_error(ctx.get());
        return false;
      },
      [&] { return group.empty() ? -1 : timesThrottled(group); },
      [&] { return groupCpuSeconds(group); });
  for (whale_rt_tensor *x : t)
    whale_rt_tensor_release(ctx.get(), x);
  if (!(timing.best > 0) && error.empty())
    error = underShare ? device + " was never throttled under its share in " +
                             std::to_string(4 * seconds) + " s"
                       : device + ": no run finished";
  return timing;
}

/// An n x n x n f32 GEMM, 2 n^3 FLOP a run.
Timing gemmTiming(const std::string &device, int threads, int64_t n,
                  double seconds, bool underShare, std::string &error) {
  return probeOp(device, threads, n, n, 2.0 * n * n * n, seconds, underShare,
                 error, [](whale_rt_context *ctx, auto &t) {
                   return whale_rt_matmul(ctx, t[0], t[1], t[2], 0, 0);
                 });
}

} // namespace

double probeGemmFlops(const std::string &device, int threads, int64_t n,
                      double seconds, std::string &error,
                      ProbeMeasure measure) {
  const Timing t = gemmTiming(device, threads, n, seconds, false, error);
  return measure == ProbeMeasure::Mean ? t.mean : t.best;
}

double probeMemoryBandwidth(const std::string &device, int threads,
                            int64_t bytes, double seconds, std::string &error) {
  const int64_t rows = std::max<int64_t>(1, bytes / (4 * 1024));
  // An add reads two tensors and writes a third.
  return probeOp(device, threads, rows, 1024, 3.0 * 4.0 * double(rows) * 1024,
                 seconds, false, error,
                 [](whale_rt_context *ctx, auto &t) {
                   return whale_rt_binary(ctx, WHALE_RT_ADD, t[0], t[1], t[2]);
                 })
      .best;
}

double probeShareFraction(const std::string &device, int threads, int64_t n,
                          double seconds, std::string &error) {
  const Timing t = gemmTiming(device, threads, n, seconds,
                              /*underShare=*/true, error);
  if (!(t.fraction > 0) && error.empty())
    error = device + ": its threads ran no time under its quota";
  return t.fraction;
}

double modelRateOfProbe(double measured, const perf::DeviceDescription &d,
                        int64_t n) {
  perf::OpCost gemm;
  gemm.matmul = true;
  gemm.m = gemm.n = gemm.k = n;
  gemm.flops = 2.0 * double(n) * double(n) * double(n);
  // On a CPU the efficiency depends on the rate itself (its copies cost
  // more multiply-adds the faster those run: perf::cpuPackingUse): the
  // rate r with r x efficiency(r) = measured, by fixed-point steps, each
  // of which moves r by the copies' share (a few percent) of the last.
  perf::DeviceDescription at = d;
  double rate = measured;
  for (int step = 0; step < 64; ++step) {
    at.flops = rate;
    const double efficiency =
        perf::gemmEfficiency(gemm, perf::deviceModelOf(at));
    const double next = efficiency > 0 ? measured / efficiency : measured;
    const bool settled = std::fabs(next - rate) <= 1e-12 * rate;
    rate = next;
    if (settled)
      break;
  }
  return rate;
}

bool probeCluster(Cluster &cluster, int shared, std::ostream &log,
                  std::string &error) {
  struct Rates {
    double flops = 0, bytes = 0;
  };
  std::map<std::string, Rates> measured; // by device
  bool saidKernels = false;
  // The GEMM and the bandwidth of the device named `key` (a GPU, or "cpu:N"
  // without a share), probed once.
  // The cost model's rate of a device whose GEMM ran at `flops`, its
  // memory at `bytes` a second where it declares none (a CPU GEMM's
  // copies are priced by it: perf::cpuPackingUse).
  auto modelRate = [&](DeviceSpec d, double flops, double bytes, int threads) {
    d.threads = threads;
    if (!(d.memoryBandwidth > 0))
      d.memoryBandwidth = bytes;
    return modelRateOfProbe(flops, describe(d, shared), d.gpu ? 4096 : 1024);
  };
  auto said = [&](const char *head, const DeviceSpec &d, const Rates &r,
                  int threads) {
    char line[200];
    std::snprintf(line, sizeof line,
                  "  %s%.1f GFLOP/s on its GEMM (the cost model's rate "
                  "%.1f), memory %.1f GB/s\n",
                  head, r.flops / 1e9,
                  modelRate(d, r.flops, r.bytes, threads) / 1e9, r.bytes / 1e9);
    log << line;
  };
  auto fullSpeed = [&](const std::string &key, const DeviceSpec &d,
                       int threads) -> const Rates * {
    const bool gpu = d.gpu;
    auto [at, fresh] = measured.try_emplace(key);
    if (!fresh)
      return &at->second;
    if (!gpu && !saidKernels) {
      log << "CPU GEMMs: OpenBLAS's " << whale_rt_blas_kernels() << "\n";
      saidKernels = true;
    }
    log << "probing "
        << (gpu ? key : "a " + std::to_string(threads) + "-thread device")
        << "...\n";
    const std::string device = gpu ? key : "probe";
    // A GPU's best run (its queue and clocks warm); a CPU device's mean,
    // what it sustains (its best GEMM was 3-5% above that here).
    at->second.flops =
        probeGemmFlops(device, threads, gpu ? 4096 : 1024, 0.5, error,
                       gpu ? ProbeMeasure::Best : ProbeMeasure::Mean);
    // Its memory too: tensors past the caches (64 MiB each on a CPU).
    if (at->second.flops > 0)
      at->second.bytes = probeMemoryBandwidth(
          device, threads, gpu ? int64_t(256) << 20 : int64_t(64) << 20, 0.5,
          error);
    if (!(at->second.flops > 0) || !(at->second.bytes > 0)) {
      measured.erase(at);
      return nullptr;
    }
    DeviceSpec unshared = d;
    unshared.cpuShare = 1;
    said("", unshared, at->second, threads);
    return &at->second;
  };
  for (size_t i = 0; i < cluster.devices.size(); ++i) {
    DeviceSpec &d = cluster.devices[i];
    if (d.flops > 0)
      continue;
    const int threads = threadsOf(d, shared);
    // CPU devices of one thread count measure alike; each GPU on its own,
    // with a GEMM large enough to fill it.
    const bool gpu = d.gpu;
    const Rates *full = fullSpeed(gpu ? runtimeDeviceName(d, i)
                                      : "cpu:" + std::to_string(threads),
                                  d, threads);
    if (!full)
      return false;
    Rates rates = *full;
    if (!gpu && d.cpuShare < 1) {
      // Under a share of its cores' time: the part of its threads' time
      // the kernel's quota lets them run, measured under it, times its
      // full speed, for its GEMMs and its memory alike (it runs at full
      // speed while it runs, and not at all while the kernel holds it).
      // Its own rate under the quota instead carried the machine's drift
      // from one probe to the next (the full device's mean GEMM ran 92-100
      // GFLOP/s probe to probe here): the full over the quarter 3.94-4.33
      // in six probes, where the devices alone trained at 4.01 : 1; the
      // part it ran was 0.249-0.251 in ten.
      char text[64];
      std::snprintf(text, sizeof text, "share=%.17g", d.cpuShare);
      const std::string key = "cpu:" + std::to_string(threads) + "@" + text;
      auto [at, fresh] = measured.try_emplace(key);
      if (fresh) {
        log << "probing a " << threads << "-thread device under " << text
            << "...\n";
        const double fraction =
            probeShareFraction("probe@" + std::string(text), threads, 512,
                               kShareProbeSeconds, error);
        if (!(fraction > 0)) {
          measured.erase(at);
          return false;
        }
        at->second = {full->flops * fraction, full->bytes * fraction};
        char head[80];
        std::snprintf(head, sizeof head, "%.3f of its full speed: ", fraction);
        said(head, d, at->second, threads);
      }
      rates = at->second;
    }
    if (!(d.memoryBandwidth > 0))
      d.memoryBandwidth = rates.bytes;
    d.flops = modelRate(d, rates.flops, rates.bytes, threads);
    d.threads = threads;
  }
  return true;
}

} // namespace whale
