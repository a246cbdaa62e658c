//===- BlasKernels.cpp - which of OpenBLAS's kernels run the GEMMs --------===//

#include "runtime/cpu/BlasKernels.h"

#include <cblas.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <mutex>

// A DYNAMIC_ARCH build's kernel table and the function that fills it from
// OPENBLAS_CORETYPE or the CPU's model. Weak: a build for one CPU has
// neither, and then nothing is chosen again.
extern "C" {
extern void *gotoblas __attribute__((weak));
void gotoblas_dynamic_init(void) __attribute__((weak));
}

namespace whale::rt::cpu {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string corename() {
  const char *name = openblas_get_corename();
  return name ? name : "";
}

} // namespace

VectorLevel kernelLevel(const std::string &core) {
  // OpenBLAS 0.3's x86-64 targets (its TargetList.txt), by the widest
  // vectors their GEMM kernels use.
  static const std::map<std::string, VectorLevel> levels = {
      {"prescott", VectorLevel::Sse},
      {"core2", VectorLevel::Sse},
      {"penryn", VectorLevel::Sse},
      {"dunnington", VectorLevel::Sse},
      {"nehalem", VectorLevel::Sse},
      {"atom", VectorLevel::Sse},
      {"opteron", VectorLevel::Sse},
      {"opteron_sse3", VectorLevel::Sse},
      {"barcelona", VectorLevel::Sse},
      {"bobcat", VectorLevel::Sse},
      {"nano", VectorLevel::Sse},
      {"sandybridge", VectorLevel::Avx},
      {"bulldozer", VectorLevel::Avx},
      {"piledriver", VectorLevel::Avx},
      {"steamroller", VectorLevel::Avx},
      {"excavator", VectorLevel::Avx},
      {"haswell", VectorLevel::Avx2},
      {"zen", VectorLevel::Avx2},
      {"skylakex", VectorLevel::Avx512},
      {"cooperlake", VectorLevel::Avx512},
      {"sapphirerapids", VectorLevel::Avx512},
  };
  auto it = levels.find(lower(core));
  return it == levels.end() ? VectorLevel::Unknown : it->second;
}

namespace {

/// The OpenBLAS core whose kernels use vectors of `level`.
std::string kernelsForLevel(VectorLevel level) {
  switch (level) {
  case VectorLevel::Avx512:
    return "SkylakeX";
  case VectorLevel::Avx2:
    return "Haswell";
  case VectorLevel::Avx:
    return "Sandybridge";
  case VectorLevel::Sse:
    return "Prescott";
  case VectorLevel::Unknown:
    break;
  }
  return "";
}

} // namespace

std::string betterKernels(const std::string &detected, VectorLevel level) {
  const VectorLevel have = kernelLevel(detected);
  if (have == VectorLevel::Unknown || level == VectorLevel::Unknown)
    return "";
  if (have > level)
    return kernelsForLevel(level);
  if (have < VectorLevel::Avx2 && level >= VectorLevel::Avx2)
    return kernelsForLevel(level);
  return "";
}

const BlasKernels &blasKernels() {
  static BlasKernels kernels;
  static std::once_flag once;
  std::call_once(once, [] {
    kernels.detected = kernels.running = corename();
    const VectorLevel level = kernelVectorLevel();
    std::string better = betterKernels(kernels.detected, level);
    // Copied: setenv below may free what getenv returned.
    const char *env = std::getenv("OPENBLAS_CORETYPE");
    const std::string named = env ? env : "";
    if (env && kernelLevel(kernels.detected) <= level) {
      kernels.note = "named by OPENBLAS_CORETYPE=" + named;
      return;
    }
    if (better.empty() || !&gotoblas || !gotoblas_dynamic_init)
      return;
    // The table is filled again from OPENBLAS_CORETYPE, set only while it
    // is read (children of this process choose for themselves).
    ::setenv("OPENBLAS_CORETYPE", better.c_str(), 1);
    void *before = gotoblas;
    gotoblas = nullptr;
    gotoblas_dynamic_init();
    if (env)
      ::setenv("OPENBLAS_CORETYPE", named.c_str(), 1);
    else
      ::unsetenv("OPENBLAS_CORETYPE");
    if (!gotoblas)
      gotoblas = before;
    kernels.running = corename();
    if (kernels.running == kernels.detected)
      return;
    if (kernelLevel(kernels.detected) > level)
      kernels.note = std::string("held to ") + llvmCpuForLevel(level) +
                     " by WHALE_CPU_LEVEL";
    else
      kernels.note = "OpenBLAS took this CPU for " + kernels.detected +
                     "; chosen by its vector width instead";
  });
  return kernels;
}

} // namespace whale::rt::cpu
