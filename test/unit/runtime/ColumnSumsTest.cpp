//===- ColumnSumsTest.cpp - sums over rows, as the GPU adds them ----------===//
//
// columnSumsKernel and columnSplitsKernel (ColumnSumKernels.cuh) add up
// rows through ColumnSums.h's plan and walk; these tests run that walk on
// a CPU, block by block and thread by thread in the kernels' order, and
// check every element is summed once and the sums match a double
// reference, for layernorm's dgamma and dbeta and a bias's gradient.

#include "runtime/cuda/ColumnSums.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace {

using namespace whale::rt::cuda;
using Shape = std::vector<int64_t>;

/// The kernels' sums of `term` under plan p, on the CPU: [output][column].
template <class Term>
std::vector<std::vector<float>> sumAsTheGpu(const ColumnSumPlan &p,
                                            const Term &term) {
  constexpr int N = Term::kOutputs;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> partials(N * p.splits * p.width, nan);
  std::vector<std::vector<float>> out(N, std::vector<float>(p.width, nan));
  for (int64_t tile = 0; tile < p.tiles; ++tile)
    for (int64_t s = 0; s < p.splits; ++s) {
      float lanes[N][kColumnLanes][kColumnTile + 1];
      for (int lane = 0; lane < kColumnLanes; ++lane)
        for (int x = 0; x < kColumnTile; ++x) {
          int64_t column = tile * kColumnTile + x;
          float acc[N] = {};
          if (column < p.width)
            laneSums(p, s, lane, column, term, acc);
          for (int o = 0; o < N; ++o)
            lanes[o][lane][x] = acc[o];
        }
      for (int x = 0; x < kColumnTile; ++x) {
        int64_t column = tile * kColumnTile + x;
        if (column >= p.width)
          continue;
        for (int o = 0; o < N; ++o) {
          float total = laneTotal(&lanes[o][0][x], kColumnTile + 1);
          if (p.direct())
            out[o][column] = total;
          else
            partials[(o * p.splits + s) * p.width + column] = total;
        }
      }
    }
  if (!p.direct())
    for (int o = 0; o < N; ++o)
      for (int64_t j = 0; j < p.width; ++j)
        out[o][j] = splitTotal(p, partials.data() + o * p.splits * p.width, j);
  return out;
}

/// Counts each element's visits.
struct CountTerm {
  static constexpr int kOutputs = 1;
  std::vector<int> *seen;
  int64_t width;
  void operator()(int64_t r, int64_t c, float *acc) const {
    ++(*seen)[r * width + c];
    acc[0] += 1;
  }
};

TEST(ColumnSums, EveryElementOnceWhateverTheShape) {
  for (auto [rows, width] :
       std::vector<std::pair<int64_t, int64_t>>{{8192, 768},
                                                {1, 5},
                                                {0, 3},
                                                {130, 1},
                                                {100000, 1},
                                                {7, 33},
                                                {64 * 1000 + 3, 40}}) {
    ColumnSumPlan p = planColumnSums(rows, width);
    std::vector<int> seen(rows * width, 0);
    auto out = sumAsTheGpu(p, CountTerm{&seen, width});
    for (int64_t e = 0; e < rows * width; ++e)
      ASSERT_EQ(seen[e], 1) << rows << "x" << width << " element " << e;
    for (int64_t j = 0; j < width; ++j)
      ASSERT_EQ(out[0][j], static_cast<float>(rows)) << rows << "x" << width;
  }
}

TEST(ColumnSums, PlanFillsTheGpuWithoutTinySplits) {
  for (int64_t rows : {1, 63, 64, 65, 1000, 8192, 1 << 20})
    for (int64_t width : {1, 31, 32, 768, 3072, 50304}) {
      ColumnSumPlan p = planColumnSums(rows, width);
      EXPECT_EQ(p.tiles, (width + 31) / 32);
      EXPECT_GE(p.splits, 1);
      EXPECT_GE(p.splits * p.rowsPerSplit, rows);
      EXPECT_LT((p.splits - 1) * p.rowsPerSplit, rows); // no empty split
      if (p.splits > 1) {
        EXPECT_GE(p.rowsPerSplit, kColumnMinRows) << rows << "x" << width;
        EXPECT_LE(p.tiles * p.splits, kColumnWantedBlocks + p.tiles);
      }
    }
  // GPT-2 small's layernorm at batch 8: 24 tiles of 42 splits, 1,008
  // blocks of 196 rows.
  ColumnSumPlan g = planColumnSums(8192, 768);
  EXPECT_EQ(g.tiles, 24);
  EXPECT_EQ(g.splits, 42);
  EXPECT_EQ(g.rowsPerSplit, 196);
}

/// Layernorm's dgamma and dbeta terms, as CudaKernels.cu's.
struct LayerNormGradTerm {
  static constexpr int kOutputs = 2;
  const float *x, *mean, *rstd, *dy;
  int64_t width;
  void operator()(int64_t r, int64_t c, float *acc) const {
    const int64_t e = r * width + c;
    const float d = dy[e];
    acc[0] += d * (x[e] - mean[r]) * rstd[r];
    acc[1] += d;
  }
};

TEST(ColumnSums, LayerNormGradientsMatchADoubleReference) {
  const int64_t rows = 3000, width = 100;
  std::vector<float> x(rows * width), dy(rows * width), mean(rows), rstd(rows);
  for (int64_t e = 0; e < rows * width; ++e) {
    x[e] = std::sin(0.37f * e);
    dy[e] = std::cos(0.11f * e + 1);
  }
  for (int64_t r = 0; r < rows; ++r) {
    mean[r] = 0.01f * (r % 7);
    rstd[r] = 1.0f + 0.001f * r;
  }
  ColumnSumPlan p = planColumnSums(rows, width);
  ASSERT_GT(p.splits, 1);
  auto out = sumAsTheGpu(p, LayerNormGradTerm{x.data(), mean.data(),
                                              rstd.data(), dy.data(), width});
  for (int64_t j = 0; j < width; ++j) {
    double g = 0, b = 0, scale = 0;
    for (int64_t r = 0; r < rows; ++r) {
      double d = dy[r * width + j];
      g += d * (x[r * width + j] - mean[r]) * rstd[r];
      b += d;
      scale += std::fabs(d);
    }
    EXPECT_NEAR(out[0][j], g, 1e-5 * scale) << j;
    EXPECT_NEAR(out[1][j], b, 1e-5 * scale) << j;
  }
}

TEST(ColumnSums, BiasGradientsAreSeenAsSumsOverRows) {
  ColumnOperands c;
  // A bias [4] added to [2, 3, 4]: 6 rows of 4, b per column.
  ASSERT_TRUE(columnOperands<Shape>({2, 3, 4}, {2, 3, 4}, {4}, {4}, c));
  EXPECT_EQ(c.rows, 6);
  EXPECT_EQ(c.width, 4);
  EXPECT_FALSE(c.aPerColumn);
  EXPECT_TRUE(c.bPerColumn);
  // Leading ones aside, on any of the shapes.
  ASSERT_TRUE(
      columnOperands<Shape>({1, 2, 3, 4}, {1, 3, 4}, {2, 3, 4}, {1, 3, 4}, c));
  EXPECT_EQ(c.rows, 2);
  EXPECT_EQ(c.width, 12);
  EXPECT_TRUE(c.aPerColumn);
  EXPECT_FALSE(c.bPerColumn);
  // A sum over everything: one column.
  ASSERT_TRUE(columnOperands<Shape>({5, 2}, {5, 2}, {}, {}, c));
  EXPECT_EQ(c.rows, 10);
  EXPECT_EQ(c.width, 1);
  // Not sums over leading rows: a middle axis, no sum at all, an operand
  // broadcast another way.
  EXPECT_FALSE(
      columnOperands<Shape>({2, 3, 4}, {2, 3, 4}, {2, 1, 4}, {2, 1, 4}, c));
  EXPECT_FALSE(columnOperands<Shape>({2, 3}, {2, 3}, {2, 3}, {2, 3}, c));
  EXPECT_FALSE(columnOperands<Shape>({2, 3}, {2, 3}, {2, 1}, {3}, c));
  EXPECT_FALSE(columnOperands<Shape>({2, 3}, {}, {2, 3}, {3}, c));
  EXPECT_FALSE(columnOperands<Shape>({1, 3}, {1, 3}, {3}, {3}, c)); // 1 row
}

} // namespace
