//===- CpuLevels.cpp - compiled programs for the CPU that runs them -------===//

#include "runtime/exec/CpuLevels.h"

#include <sys/stat.h>

namespace whale {

std::string cpuLevelFile(const std::string &file, const std::string &level) {
  const size_t dot = file.rfind('.');
  if (dot == std::string::npos)
    return file + "." + level;
  return file.substr(0, dot) + "." + level + file.substr(dot);
}

bool cpuRunsLevel(const std::string &level) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  // The features LLVM's x86-64-v3 and -v4 assume (beyond the baseline's).
  const bool v3 =
      __builtin_cpu_supports("avx") && __builtin_cpu_supports("avx2") &&
      __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") &&
      __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c") &&
      __builtin_cpu_supports("movbe") && __builtin_cpu_supports("popcnt") &&
      __builtin_cpu_supports("sse4.2");
  if (level == "x86-64-v3")
    return v3;
  if (level == "x86-64-v4")
    return v3 && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512cd") &&
           __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl");
#else
  (void)level;
#endif
  return false;
}

std::string libraryForThisCpu(const std::string &folder,
                              const std::string &file) {
  for (const char *level : kCpuLevels) {
    const std::string path = folder + "/" + cpuLevelFile(file, level);
    struct stat st;
    if (cpuRunsLevel(level) && ::stat(path.c_str(), &st) == 0)
      return path;
  }
  return folder + "/" + file;
}

} // namespace whale
