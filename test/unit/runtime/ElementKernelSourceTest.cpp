//===- ElementKernelSourceTest.cpp - element programs as kernels of their own
//===//
//
// ElementKernelSource.h writes a program as a kernel's source. Built for
// the host, each kernel must write what the interpreter writes, bit for
// bit, whole or in parts; where NVRTC is installed (it needs no GPU) the
// same source must compile for a GPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/ElementKernelSource.h"
#include "../HostElementKernel.h"
#include "runtime/FusedProgram.h"
#include "runtime/cuda/Nvrtc.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

namespace fused = whale::rt::fused;

/// relu(x + b) over [rows, cols], b a row; with `sum`, also its sum over
/// the rows (a mean where `mean`).
std::vector<int64_t> reluProgram(int64_t rows, int64_t cols, bool sum,
                                 bool mean = false) {
  std::vector<int64_t> w = {fused::kMagic,
                            2,
                            rows,
                            cols,
                            2,
                            sum ? 2 : 1,
                            6,
                            4,
                            1,
                            1,
                            0,
                            1, // x, b
                            1,
                            1,
                            0,
                            5}; // y
  if (sum)
    w.insert(w.end(), {0, 1, mean ? 1 : 0, 5});
  w.insert(w.end(), {fused::NoRowOp,
                     fused::Add,
                     2,
                     0,
                     1,
                     -1,
                     fused::Positive,
                     3,
                     2,
                     -1,
                     -1,
                     fused::Const,
                     4,
                     0,
                     -1,
                     -1,
                     fused::Select,
                     5,
                     3,
                     2,
                     4});
  return w;
}

struct Outputs {
  std::vector<float> y, s;
};

/// The program on x and b: by the interpreter (kernel null) or by `kernel`
/// in `parts`.
Outputs run(const fused::Layout &l, const std::vector<fused::Instr> &code,
            whale::testing::HostElementKernel kernel, int64_t parts,
            const std::vector<float> &x, const std::vector<float> &b) {
  Outputs r{std::vector<float>(x.size(), -7.0f),
            std::vector<float>(b.size(), -7.0f)};
  const void *data[] = {x.data(), b.data(), r.y.data(), r.s.data()};
  if (!kernel) {
    for (int64_t t = 0; t < l.threads; ++t)
      fused::runThread(l, code.data(), int(code.size()), data, t);
    return r;
  }
  whale::testing::HostOperands p{};
  for (int i = 0; i < l.inputs + l.outputs; ++i)
    p.data[i] = data[i];
  std::vector<float> partials(l.outputs * parts * l.threads);
  kernel(p, parts, partials.data());
  if (parts > 1)
    for (int64_t t = 0; t < l.threads; ++t)
      fused::sumParts(l, data, t, parts, partials.data());
  return r;
}

TEST(ElementKernelSource, GeneratedKernelsWriteWhatTheInterpreterWrites) {
  for (auto [sum, mean] :
       {std::pair{false, false}, {true, false}, {true, true}})
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{4, 3}, {70, 33}}) {
      const std::string what = std::to_string(rows) + "x" +
                               std::to_string(cols) + (sum ? " sum" : "") +
                               (mean ? " mean" : "");
      std::vector<int64_t> words = reluProgram(rows, cols, sum, mean);
      fused::Layout l;
      std::vector<fused::Instr> code;
      std::string why, source;
      ASSERT_TRUE(fused::parse(words.data(), words.size(), l, code, why))
          << why;
      EXPECT_EQ(l.dense[0], !sum) << what;
      ASSERT_TRUE(fused::elementKernelSource(l, code, source, why)) << why;
      whale::testing::HostElementKernel kernel =
          whale::testing::buildHostElementKernel(source, why);
      ASSERT_TRUE(kernel) << why << "\n" << source;
      std::vector<float> x(rows * cols), b(cols);
      for (size_t i = 0; i < x.size(); ++i)
        x[i] = float(int(i * 37 % 11)) - 5.0f + 0.125f * float(i % 7);
      for (int64_t c = 0; c < cols; ++c)
        b[c] = float(c % 3) - 1.0f;
      const Outputs want = run(l, code, nullptr, 1, x, b);
      for (int64_t parts : {int64_t(1), int64_t(3)}) {
        if (parts > 1 && !sum)
          continue;
        const Outputs got = run(l, code, kernel, parts, x, b);
        EXPECT_EQ(got.y, want.y) << what << ", " << parts << " parts";
        if (sum && parts == 1)
          EXPECT_EQ(got.s, want.s) << what;
        if (sum && parts > 1) // the parts add in another order
          for (int64_t c = 0; c < cols; ++c)
            EXPECT_NEAR(got.s[c], want.s[c], 1e-5f * std::fabs(want.s[c]))
                << what << ", " << parts << " parts, column " << c;
      }
    }
}

TEST(ElementKernelSource, ARowOpStaysWithTheInterpreter) {
  fused::Layout l;
  l.rowOp = fused::LayerNorm;
  std::string source, why;
  EXPECT_FALSE(fused::elementKernelSource(l, {}, source, why));
  EXPECT_EQ(why, "a program with a row op runs in the interpreter");
}

/// Where the toolkit's NVRTC loads, the generated source compiles for a
/// Hopper GPU, and a source it cannot compile gives the compiler's log.
TEST(ElementKernelSource, NvrtcCompilesTheSourceForAGpu) {
  std::string why;
  whale::rt::cuda::Nvrtc *nvrtc = whale::rt::cuda::Nvrtc::get(why);
  if (!nvrtc)
    GTEST_SKIP() << why;
  std::vector<int64_t> words = reluProgram(70, 33, true, true);
  fused::Layout l;
  std::vector<fused::Instr> code;
  std::string source;
  ASSERT_TRUE(fused::parse(words.data(), words.size(), l, code, why));
  ASSERT_TRUE(fused::elementKernelSource(l, code, source, why));
  std::vector<char> cubin;
  ASSERT_TRUE(nvrtc->compile(source, "sm_90", cubin, why)) << why;
  EXPECT_GT(cubin.size(), 1000u);
  EXPECT_FALSE(nvrtc->compile("this is not CUDA", "sm_90", cubin, why));
  EXPECT_NE(why.find("this is not CUDA"), std::string::npos) << why;
}

} // namespace
