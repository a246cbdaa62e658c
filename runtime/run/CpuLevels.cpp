//===- CpuLevels.cpp - compiled programs for the CPU that runs them -------===//

#include "runtime/run/CpuLevels.h"

#include "support/VectorLevel.h"

#include <sys/stat.h>

namespace whale {

std::string cpuLevelFile(const std::string &file, const std::string &level) {
  const size_t dot = file.rfind('.');
  if (dot == std::string::npos)
    return file + "." + level;
  return file.substr(0, dot) + "." + level + file.substr(dot);
}

bool cpuRunsLevel(const std::string &level) {
  // Held to WHALE_CPU_LEVEL, as the JIT's kernels are.
  const VectorLevel wanted = levelOfLlvmCpu(level);
  return wanted != VectorLevel::Unknown && kernelVectorLevel() >= wanted;
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
