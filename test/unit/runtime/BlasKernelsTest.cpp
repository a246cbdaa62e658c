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
