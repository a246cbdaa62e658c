//===- BlasKernelsTest.cpp - OpenBLAS's kernels chosen by the CPU ---------===//
//
// The rule (a fallback below AVX2 on a CPU with more is replaced, nothing
// else is), and what runs on this machine after it: kernels at least as
// wide as the CPU allows up to AVX2, unless the user named them. GEMM
// results through the chosen kernels are checked by every GEMM test.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/BlasKernels.h"
#include "runtime/WhaleRuntime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

namespace {

using whale::rt::cpu::betterKernels;
using whale::rt::cpu::kernelLevel;
using whale::rt::cpu::VectorLevel;

TEST(BlasKernels, OnlyAFallbackBelowTheCpusVectorsIsReplaced) {
  EXPECT_EQ(betterKernels("Prescott", VectorLevel::Avx512), "SkylakeX");
  EXPECT_EQ(betterKernels("prescott", VectorLevel::Avx2), "Haswell");
  EXPECT_EQ(betterKernels("Nehalem", VectorLevel::Avx512), "SkylakeX");
  EXPECT_EQ(betterKernels("Sandybridge", VectorLevel::Avx2), "Haswell");
  // Kernels of AVX2 or more were chosen for a CPU OpenBLAS knows.
  EXPECT_EQ(betterKernels("Haswell", VectorLevel::Avx512), "");
  EXPECT_EQ(betterKernels("Zen", VectorLevel::Avx512), "");
  EXPECT_EQ(betterKernels("SkylakeX", VectorLevel::Avx512), "");
  // A CPU without AVX2 keeps what OpenBLAS chose; so does a name it lists
  // that this rule does not know.
  EXPECT_EQ(betterKernels("Prescott", VectorLevel::Avx), "");
  EXPECT_EQ(betterKernels("Prescott", VectorLevel::Sse), "");
  EXPECT_EQ(betterKernels("NewCore2031", VectorLevel::Avx512), "");
}

TEST(BlasKernels, KernelsWiderThanTheLevelAreReplaced) {
  // WHALE_CPU_LEVEL holds a CPU with AVX-512 to the AVX2 path.
  EXPECT_EQ(betterKernels("SkylakeX", VectorLevel::Avx2), "Haswell");
  EXPECT_EQ(betterKernels("Cooperlake", VectorLevel::Avx2), "Haswell");
  EXPECT_EQ(betterKernels("Haswell", VectorLevel::Avx), "Sandybridge");
  EXPECT_EQ(betterKernels("Zen", VectorLevel::Sse), "Prescott");
  EXPECT_EQ(betterKernels("Haswell", VectorLevel::Avx2), "");
  EXPECT_EQ(betterKernels("Haswell", VectorLevel::Unknown), "");
}

/// Sets WHALE_CPU_LEVEL for one scope, and puts back what was there.
class LevelSetting {
public:
  explicit LevelSetting(const char *value) {
    if (const char *was = std::getenv("WHALE_CPU_LEVEL"))
      before = was;
    ::setenv("WHALE_CPU_LEVEL", value, 1);
  }
  ~LevelSetting() {
    if (before.empty())
      ::unsetenv("WHALE_CPU_LEVEL");
    else
      ::setenv("WHALE_CPU_LEVEL", before.c_str(), 1);
  }

private:
  std::string before;
};

TEST(VectorLevelSetting, NamesALevelOrIsRefused) {
  std::string error;
  {
    LevelSetting l("avx2");
    EXPECT_EQ(whale::requestedVectorLevel(error), VectorLevel::Avx2);
    EXPECT_EQ(error, "");
    // Never above the CPU's, and the CPU's where it is lower.
    EXPECT_LE(whale::kernelVectorLevel(), VectorLevel::Avx2);
    EXPECT_EQ(whale::kernelVectorLevel(),
              std::min(whale::hardwareVectorLevel(), VectorLevel::Avx2));
  }
  {
    LevelSetting l("X86-64-V4");
    EXPECT_EQ(whale::requestedVectorLevel(error), VectorLevel::Avx512);
    if (whale::hardwareVectorLevel() < VectorLevel::Avx512)
      EXPECT_NE(whale::checkVectorLevelSetting().find("this CPU runs only"),
                std::string::npos);
    else
      EXPECT_EQ(whale::checkVectorLevelSetting(), "");
  }
  {
    LevelSetting l("sse2");
    EXPECT_EQ(whale::kernelVectorLevel(), VectorLevel::Sse);
    EXPECT_EQ(std::string(whale::llvmCpuForLevel(whale::kernelVectorLevel())),
              "x86-64");
  }
  {
    LevelSetting l("avx1024");
    EXPECT_EQ(whale::requestedVectorLevel(error), VectorLevel::Unknown);
    EXPECT_NE(error.find("WHALE_CPU_LEVEL=avx1024 is not a level"),
              std::string::npos)
        << error;
    EXPECT_EQ(whale::checkVectorLevelSetting(), error);
    // Refused where it is checked; the kernels keep the CPU's level.
    EXPECT_EQ(whale::kernelVectorLevel(), whale::hardwareVectorLevel());
  }
  for (VectorLevel v : {VectorLevel::Sse, VectorLevel::Avx, VectorLevel::Avx2,
                        VectorLevel::Avx512})
    EXPECT_EQ(whale::levelOfLlvmCpu(whale::llvmCpuForLevel(v)), v);
}

TEST(BlasKernels, KernelsAreRankedByTheirVectors) {
  EXPECT_EQ(kernelLevel("Prescott"), VectorLevel::Sse);
  EXPECT_EQ(kernelLevel("SANDYBRIDGE"), VectorLevel::Avx);
  EXPECT_EQ(kernelLevel("Haswell"), VectorLevel::Avx2);
  EXPECT_EQ(kernelLevel("Cooperlake"), VectorLevel::Avx512);
  EXPECT_EQ(kernelLevel(""), VectorLevel::Unknown);
}

TEST(BlasKernels, ThisMachineRunsKernelsAsWideAsItsCpuAllows) {
  const whale::rt::cpu::BlasKernels &k = whale::rt::cpu::blasKernels();
  ASSERT_FALSE(k.running.empty());
  const VectorLevel level = whale::kernelVectorLevel();
  if (kernelLevel(k.detected) == VectorLevel::Unknown)
    GTEST_SKIP() << "OpenBLAS chose kernels this rule does not know: "
                 << k.detected;
  // Never wider than the level (the CPU's, or WHALE_CPU_LEVEL's).
  EXPECT_LE(kernelLevel(k.running), level)
      << "detected " << k.detected << ", running " << k.running;
  if (std::getenv("OPENBLAS_CORETYPE") && kernelLevel(k.detected) <= level) {
    EXPECT_NE(k.note.find("OPENBLAS_CORETYPE"), std::string::npos);
    return;
  }
  const VectorLevel want = std::min(level, VectorLevel::Avx2);
  EXPECT_GE(kernelLevel(k.running), want)
      << "detected " << k.detected << ", running " << k.running;
  EXPECT_EQ(k.note.empty(), k.running == k.detected) << k.note;
  // The C ABI says the same.
  EXPECT_EQ(
      std::string(whale_rt_blas_kernels()).rfind(k.running + " kernels", 0), 0u)
      << whale_rt_blas_kernels();
}

} // namespace
