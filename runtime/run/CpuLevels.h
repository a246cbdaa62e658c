//===- CpuLevels.h - compiled programs for the CPU that runs them -*- C++
//-*-===//
//
// A bundle's fused kernels are loops the compiler vectorizes for a target.
// Built for the x86-64 baseline (SSE2) alone they ran a small GPT's step
// 2.3 times slower than the JIT, which builds for the host (330 against
// 85 ms; built for x86-64-v3, 143 ms; docs/aot.md). So `whale compile
// --emit=bundle` also builds each library for the x86-64 levels below,
// beside the baseline one, and the runner loads the best its CPU runs.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_RUN_CPULEVELS_H
#define WHALE_RUNTIME_RUN_CPULEVELS_H

#include <string>

namespace whale {

/// The x86-64 levels a bundle's libraries are also built for, best first
/// (LLVM's CPU names): AVX-512, then AVX2 with FMA.
inline constexpr const char *kCpuLevels[] = {"x86-64-v4", "x86-64-v3"};

/// `file` ("ranks-0.so") as built for `level`: "ranks-0.x86-64-v4.so".
std::string cpuLevelFile(const std::string &file, const std::string &level);

/// Whether code built for `level` may run here: this CPU (and its OS) runs
/// it, and WHALE_CPU_LEVEL (support/VectorLevel.h) does not hold the
/// kernels below it.
bool cpuRunsLevel(const std::string &level);

/// The library `file` of the bundle in `folder` to load here: its variant
/// for the best level this CPU runs that the bundle holds, else `file`.
std::string libraryForThisCpu(const std::string &folder,
                              const std::string &file);

} // namespace whale

#endif
