//===- VectorLevel.cpp - how wide the vectors Whale's CPU kernels use -----===//

#include "support/VectorLevel.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace whale {

VectorLevel hardwareVectorLevel() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  const bool v3 =
      __builtin_cpu_supports("avx") && __builtin_cpu_supports("avx2") &&
      __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") &&
      __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c") &&
      __builtin_cpu_supports("movbe") && __builtin_cpu_supports("popcnt") &&
      __builtin_cpu_supports("sse4.2");
  if (v3 && __builtin_cpu_supports("avx512f") &&
      __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512cd") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return VectorLevel::Avx512;
  if (v3)
    return VectorLevel::Avx2;
  if (__builtin_cpu_supports("avx"))
    return VectorLevel::Avx;
  return VectorLevel::Sse;
#else
  return VectorLevel::Unknown;
#endif
}

VectorLevel levelOfLlvmCpu(const std::string &cpu) {
  if (cpu == "x86-64-v4")
    return VectorLevel::Avx512;
  if (cpu == "x86-64-v3")
    return VectorLevel::Avx2;
  if (cpu == "x86-64-v2")
    return VectorLevel::Avx;
  if (cpu == "x86-64")
    return VectorLevel::Sse;
  return VectorLevel::Unknown;
}

const char *llvmCpuForLevel(VectorLevel level) {
  switch (level) {
  case VectorLevel::Avx512:
    return "x86-64-v4";
  case VectorLevel::Avx2:
    return "x86-64-v3";
  case VectorLevel::Avx:
    return "x86-64-v2";
  case VectorLevel::Sse:
  case VectorLevel::Unknown:
    break;
  }
  return "x86-64";
}

VectorLevel requestedVectorLevel(std::string &error) {
  error.clear();
  const char *value = std::getenv("WHALE_CPU_LEVEL");
  if (!value || !*value)
    return VectorLevel::Unknown;
  std::string name(value);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (name == "avx512")
    return VectorLevel::Avx512;
  if (name == "avx2")
    return VectorLevel::Avx2;
  if (name == "sse2" || name == "baseline")
    return VectorLevel::Sse;
  if (VectorLevel level = levelOfLlvmCpu(name); level != VectorLevel::Unknown)
    return level;
  error = "WHALE_CPU_LEVEL=" + std::string(value) +
          " is not a level: expected avx512 (x86-64-v4), avx2 (x86-64-v3), "
          "x86-64-v2 or sse2 (x86-64)";
  return VectorLevel::Unknown;
}

VectorLevel kernelVectorLevel() {
  const VectorLevel cpu = hardwareVectorLevel();
  std::string error;
  const VectorLevel asked = requestedVectorLevel(error);
  if (asked == VectorLevel::Unknown || cpu == VectorLevel::Unknown)
    return cpu;
  return std::min(cpu, asked);
}

std::string checkVectorLevelSetting() {
  std::string error;
  const VectorLevel asked = requestedVectorLevel(error);
  if (!error.empty())
    return error;
  const VectorLevel cpu = hardwareVectorLevel();
  if (asked != VectorLevel::Unknown && cpu != VectorLevel::Unknown &&
      asked > cpu)
    return "WHALE_CPU_LEVEL asks for " + std::string(llvmCpuForLevel(asked)) +
           ", but this CPU runs only " + llvmCpuForLevel(cpu);
  return "";
}

} // namespace whale
