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
#include "runtime/cuda/Nvrtc.h"
#include "runtime/ops/ElementProgram.h"

#include <gtest/gtest.h>

#include <cstring>
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
                            fused::F32Operand,
                            0,
                            1,
                            fused::F32Operand, // x, b
                            1,
                            1,
                            0,
                            5,
                            fused::F32Operand}; // y
  if (sum)
    w.insert(w.end(), {0, 1, mean ? 1 : 0, 5, fused::F32Operand});
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
        if (sum && parts == 1) {
          EXPECT_EQ(got.s, want.s) << what;
        }
        if (sum && parts > 1) { // the parts add in another order
          for (int64_t c = 0; c < cols; ++c) {
            EXPECT_NEAR(got.s[c], want.s[c], 1e-5f * std::fabs(want.s[c]))
                << what << ", " << parts << " parts, column " << c;
          }
        }
      }
    }
}

/// A program ending in a row op: (x + b) then layernorm with gamma and
/// beta, or softmax, over rows of `width`.
std::vector<int64_t> rowProgram(int64_t rows, int64_t width, bool layerNorm) {
  float eps = 1e-5f;
  uint32_t bits;
  std::memcpy(&bits, &eps, sizeof bits);
  std::vector<int64_t> w = {fused::kMagic,
                            2,
                            rows,
                            width,
                            layerNorm ? 4 : 2,
                            2,
                            5,
                            1,
                            1,
                            1,
                            fused::F32Operand,
                            0,
                            1,
                            fused::F32Operand}; // x, b (a row)
  if (layerNorm)                                // gamma, beta: rows of width
    w.insert(w.end(), {0, 1, fused::F32Operand, 0, 1, fused::F32Operand});
  w.insert(w.end(), {1, 1, 0, 4, fused::F32Operand,   // s = x + b
                     1, 1, 0, 4, fused::F32Operand}); // the row op's result
  w.push_back(layerNorm ? fused::LayerNorm : fused::Softmax);
  w.insert(w.end(), {1, 4}); // result 1, its input register 4
  if (layerNorm)
    w.insert(w.end(), {2, 3, int64_t(bits)});
  w.insert(w.end(), {fused::Add, 4, 0, 1, -1});
  return w;
}

/// Row programs' kernels write what runRow writes, bit for bit: the
/// host's block is one lane, so its sums add in runRow's order.
TEST(ElementKernelSource, RowKernelsWriteWhatTheInterpreterWrites) {
  for (bool layerNorm : {true, false}) {
    const int64_t rows = 5, width = 37;
    std::vector<int64_t> words = rowProgram(rows, width, layerNorm);
    fused::Layout l;
    std::vector<fused::Instr> code;
    std::string why, source;
    ASSERT_TRUE(fused::parse(words.data(), words.size(), l, code, why)) << why;
    ASSERT_TRUE(fused::elementKernelSource(l, code, source, why)) << why;
    whale::testing::HostElementKernel kernel =
        whale::testing::buildHostElementKernel(source, why);
    ASSERT_TRUE(kernel) << why << "\n" << source;
    std::vector<float> x(rows * width), b(width), g(width), be(width);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = float(int(i * 37 % 11)) - 5.0f + 0.125f * float(i % 7);
    for (int64_t c = 0; c < width; ++c) {
      b[c] = float(c % 3) - 1.0f;
      g[c] = 1.0f + 0.01f * float(c);
      be[c] = 0.5f - 0.02f * float(c);
    }
    std::vector<float> sWant(x.size()), yWant(x.size()), sGot(x.size(), -7),
        yGot(x.size(), -7);
    std::vector<const void *> want = {x.data(), b.data()},
                              got = {x.data(), b.data()};
    if (layerNorm) {
      want.insert(want.end(), {g.data(), be.data()});
      got.insert(got.end(), {g.data(), be.data()});
    }
    want.insert(want.end(), {sWant.data(), yWant.data()});
    got.insert(got.end(), {sGot.data(), yGot.data()});
    for (int64_t row = 0; row < rows; ++row)
      fused::runRow(l, code.data(), int(code.size()), want.data(), row);
    whale::testing::HostOperands p{};
    for (size_t i = 0; i < got.size(); ++i)
      p.data[i] = got[i];
    kernel(p, 1, nullptr);
    EXPECT_EQ(sGot, sWant) << (layerNorm ? "layernorm" : "softmax");
    EXPECT_EQ(yGot, yWant) << (layerNorm ? "layernorm" : "softmax");
  }
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
  for (bool layerNorm : {true, false}) { // the row kernels' block sums
    std::vector<int64_t> rowWords = rowProgram(5, 37, layerNorm);
    ASSERT_TRUE(fused::parse(rowWords.data(), rowWords.size(), l, code, why));
    ASSERT_TRUE(fused::elementKernelSource(l, code, source, why));
    EXPECT_TRUE(nvrtc->compile(source, "sm_90", cubin, why)) << why;
  }
  EXPECT_FALSE(nvrtc->compile("this is not CUDA", "sm_90", cubin, why));
  EXPECT_NE(why.find("this is not CUDA"), std::string::npos) << why;
}

} // namespace
