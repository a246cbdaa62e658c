//===- DeviceProbe.cpp - measuring a device's compute rate ----------------===//

#include "lib/perf/DeviceProbe.h"

#include "perfmodel/DeviceModel.h"
#include "runtime/WhaleRuntime.h"

#include <algorithm>
#include <chrono>
#include <memory>

namespace whale {

double probeGemmFlops(const std::string &device, int threads, int64_t n,
                      double seconds, std::string &error, bool sustained) {
  whale_rt_context *opened = nullptr;
  char why[640] = "";
  if (whale_rt_context_open(device.c_str(), threads, 0, 0, &opened, why,
                            sizeof why) != WHALE_RT_OK) {
    error = "cannot open " + device + ": " + why;
    return 0;
  }
  std::unique_ptr<whale_rt_context, void (*)(whale_rt_context *)> ctx(
      opened, whale_rt_context_destroy);
  // This thread drives the GEMMs (and computes its part): under a share it
  // runs under the quota, as a rank's thread does; closing the device
  // puts it back.
  if (whale_rt_context_enter(ctx.get()) != WHALE_RT_OK) {
    error = whale_rt_last_error(ctx.get());
    return 0;
  }
  int64_t shape[2] = {n, n};
  whale_rt_tensor *t[3] = {nullptr, nullptr, nullptr};
  for (whale_rt_tensor *&x : t)
    if (whale_rt_tensor_create(ctx.get(), WHALE_RT_F32, 2, shape, &x) !=
        WHALE_RT_OK) {
      error = whale_rt_last_error(ctx.get());
      return 0;
    }
  whale_rt_fill(ctx.get(), t[0], 0.5);
  whale_rt_fill(ctx.get(), t[1], 0.25);
  using Clock = std::chrono::steady_clock;
  double best = 0, work = 0;
  Clock::time_point start = Clock::now(), timed = start;
  // One warm-up run, then the best of the rest: the rate a device reaches,
  // not its first-touch costs.
  for (int run = 0;; ++run) {
    Clock::time_point t0 = Clock::now();
    // Reading one element waits for the GEMM on a GPU (kernels queue).
    float first;
    if (whale_rt_matmul(ctx.get(), t[0], t[1], t[2], 0, 0) != WHALE_RT_OK ||
        whale_rt_tensor_read(ctx.get(), t[2], &first, sizeof first) !=
            WHALE_RT_OK) {
      error = whale_rt_last_error(ctx.get());
      return 0;
    }
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (run == 0)
      timed = Clock::now();
    else {
      best = std::max(best, 2.0 * n * n * n / std::max(s, 1e-9));
      work += 2.0 * n * n * n;
    }
    if (run >= 3 &&
        std::chrono::duration<double>(Clock::now() - start).count() > seconds)
      break;
  }
  if (sustained)
    best =
        work /
        std::max(1e-9,
                 std::chrono::duration<double>(Clock::now() - timed).count());
  for (whale_rt_tensor *x : t)
    whale_rt_tensor_release(ctx.get(), x);
  return best;
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

} // namespace whale
