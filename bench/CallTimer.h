//===- CallTimer.h - seconds a runtime call takes ---------------*- C++ -*-===//
//
// The timing the device sweeps share (GemmSweep.cpp, AttentionSweep.cpp):
// two untimed calls, then batches of back-to-back calls, each batch ended
// by `settle` (a read of an output back, which waits for the device), until
// `minSeconds` have passed.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_BENCH_CALLTIMER_H
#define WHALE_BENCH_CALLTIMER_H

#include <chrono>
#include <cstdint>

namespace whale::bench {

/// Seconds a call of `step` takes, or -1 when a call or a settle fails.
template <typename Step, typename Settle>
double secondsPerCall(Step step, Settle settle, double minSeconds, int batch) {
  if (!step() || !step() || !settle())
    return -1;
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  int64_t done = 0;
  double elapsed = 0;
  do {
    for (int i = 0; i < batch; ++i, ++done)
      if (!step())
        return -1;
    if (!settle())
      return -1;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < minSeconds);
  return elapsed / double(done);
}

} // namespace whale::bench

#endif
