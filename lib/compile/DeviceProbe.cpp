//===- DeviceProbe.cpp - measuring a device's compute rate ----------------===//

#include "lib/compile/DeviceProbe.h"

#include "lib/compile/Cluster.h"
#include "perfmodel/DeviceModel.h"
#include "runtime/WhaleRuntime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
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

/// The rate of `run` (which does `work` units and reads back one value, so
/// a GPU's queue has drained): one warm-up run, then the best of the rest
/// (the rate a device reaches, not its first-touch costs) over about
/// `seconds`, or under a quota (`sustained`) their work over their whole
/// time. 0 where a run fails.
template <class Run>
double timedRate(double work, double seconds, bool sustained, Run run) {
  using Clock = std::chrono::steady_clock;
  double best = 0, done = 0;
  Clock::time_point start = Clock::now(), timed = start;
  for (int i = 0;; ++i) {
    Clock::time_point t0 = Clock::now();
    if (!run())
      return 0;
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (i == 0)
      timed = Clock::now();
    else {
      best = std::max(best, work / std::max(s, 1e-9));
      done += work;
    }
    if (i >= 3 &&
        std::chrono::duration<double>(Clock::now() - start).count() > seconds)
      break;
  }
  if (sustained)
    best =
        done /
        std::max(1e-9,
                 std::chrono::duration<double>(Clock::now() - timed).count());
  return best;
}

/// The rate of `op` (the context and three n x m f32 tensors; `work` units
/// a run) on `device`, as timedRate measures it; its result's first value
/// read back after each run.
template <class Op>
double probeOp(const std::string &device, int threads, int64_t n, int64_t m,
               double work, double seconds, bool sustained, std::string &error,
               Op op) {
  Context ctx = openDevice(device, threads, error);
  if (!ctx)
    return 0;
  std::vector<whale_rt_tensor *> t;
  if (!makeTensors(ctx.get(), n, m, 0.5f, t, 3, error))
    return 0;
  const double rate = timedRate(work, seconds, sustained, [&] {
    float first;
    if (op(ctx.get(), t) == WHALE_RT_OK &&
        whale_rt_tensor_read(ctx.get(), t[2], &first, sizeof first) ==
            WHALE_RT_OK)
      return true;
    error = whale_rt_last_error(ctx.get());
    return false;
  });
  for (whale_rt_tensor *x : t)
    whale_rt_tensor_release(ctx.get(), x);
  return rate;
}

} // namespace

double probeGemmFlops(const std::string &device, int threads, int64_t n,
                      double seconds, std::string &error, bool sustained) {
  return probeOp(device, threads, n, n, 2.0 * n * n * n, seconds, sustained,
                 error, [](whale_rt_context *ctx, auto &t) {
                   return whale_rt_matmul(ctx, t[0], t[1], t[2], 0, 0);
                 });
}

double probeMemoryBandwidth(const std::string &device, int threads,
                            int64_t bytes, double seconds, std::string &error) {
  const int64_t rows = std::max<int64_t>(1, bytes / (4 * 1024));
  // An add reads two tensors and writes a third.
  return probeOp(device, threads, rows, 1024, 3.0 * 4.0 * double(rows) * 1024,
                 seconds, /*sustained=*/false, error,
                 [](whale_rt_context *ctx, auto &t) {
                   return whale_rt_binary(ctx, WHALE_RT_ADD, t[0], t[1], t[2]);
                 });
}

double modelRateOfProbe(double measured, const perf::DeviceDescription &d,
                        int64_t n) {
  perf::DeviceDescription at = d;
  at.flops = measured;
  perf::OpCost gemm;
  gemm.matmul = true;
  gemm.m = gemm.n = gemm.k = n;
  gemm.flops = 2.0 * double(n) * double(n) * double(n);
  const double efficiency = perf::gemmEfficiency(gemm, perf::deviceModelOf(at));
  return efficiency > 0 ? measured / efficiency : measured;
}

bool probeCluster(Cluster &cluster, int shared, std::ostream &log,
                  std::string &error) {
  std::map<std::string, std::pair<double, double>> measured; // by device
  bool saidKernels = false;
  for (size_t i = 0; i < cluster.devices.size(); ++i) {
    DeviceSpec &d = cluster.devices[i];
    if (d.flops > 0)
      continue;
    const int threads = threadsOf(d, shared);
    // CPU devices of one thread count and share measure alike; each GPU
    // on its own, with a GEMM large enough to fill it. A CPU device under a
    // share of its cores' time runs under that quota while it is probed,
    // over a second (ten of the kernel's periods), its rate the work over
    // the whole time.
    const bool gpu = d.gpu, underShare = !gpu && d.cpuShare < 1;
    std::string shareSuffix;
    if (underShare) {
      char text[64];
      std::snprintf(text, sizeof text, "@share=%.17g", d.cpuShare);
      shareSuffix = text;
    }
    const std::string key =
        gpu ? runtimeDeviceName(d, i)
            : "cpu:" + std::to_string(threads) + shareSuffix;
    const int64_t n = gpu ? 4096 : 1024;
    auto [at, fresh] = measured.try_emplace(key);
    if (fresh) {
      if (!gpu && !saidKernels) {
        log << "CPU GEMMs: OpenBLAS's " << whale_rt_blas_kernels() << "\n";
        saidKernels = true;
      }
      log << "probing "
          << (gpu ? key
                  : "a " + std::to_string(threads) + "-thread device" +
                        (underShare ? " under " + shareSuffix.substr(1)
                                    : std::string()))
          << "...\n";
      const std::string device = gpu ? key : "probe" + shareSuffix;
      const double seconds = underShare ? 1.0 : 0.5;
      at->second.first =
          probeGemmFlops(device, threads, n, seconds, error, underShare);
      // Its memory too: tensors past the caches (64 MiB each on a CPU).
      // Under a share, the best run (an add fits in a period's quota and
      // runs at full speed) times the share: the device moves bytes only
      // while it runs. Timed over the quota's periods instead, a few adds
      // a period made it vary by a seventh from probe to probe (4.6 to 6.1
      // GB/s at a quarter share here); the GEMM's rate, many more runs a
      // second, held within 3%.
      if (at->second.first > 0)
        at->second.second =
            probeMemoryBandwidth(device, threads,
                                 gpu ? int64_t(256) << 20 : int64_t(64) << 20,
                                 seconds, error) *
            (underShare ? d.cpuShare : 1.0);
      if (!(at->second.first > 0) || !(at->second.second > 0)) {
        measured.erase(at);
        return false;
      }
    }
    const auto [flops, bytes] = measured[key];
    if (!(d.memoryBandwidth > 0))
      d.memoryBandwidth = bytes;
    d.threads = threads;
    d.flops = modelRateOfProbe(flops, describe(d, shared), n);
    if (fresh) {
      char line[160];
      std::snprintf(line, sizeof line,
                    "  %.1f GFLOP/s on its GEMM (the cost model's rate %.1f), "
                    "memory %.1f GB/s\n",
                    flops / 1e9, d.flops / 1e9, bytes / 1e9);
      log << line;
    }
  }
  return true;
}

} // namespace whale
