//===- UnevenShardTest.cpp - uneven shards through the C ABI --------------===//
//
// Two ranks of one shard group weighted 3:1, each on its own thread and
// context: their parts, gathered, must be the whole; their parameter parts
// must be the slices of what one device initializes; the sharded cross
// entropy over 3:1 classes must be the plain one; and a part that is not
// the rank's is an error, not a crash.
//
//===----------------------------------------------------------------------===//

#include "../RuntimeFixture.h"

#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using whale::testing::TestRuntime;

const int64_t kWeights[] = {3, 1};

using Pair = whale::testing::TwoReplicas;

/// Row-major [rows x cols], columns from `firstCol`: 100 * row + column.
std::vector<float> grid(int64_t rows, int64_t cols, int64_t firstCol = 0) {
  std::vector<float> v;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      v.push_back(float(100 * i + firstCol + j));
  return v;
}

TEST(UnevenShards, AllGatherJoinsPartsOfThreeAndOneUnits) {
  // 8 columns in 4 units: rank 0 holds columns 0-5, rank 1 columns 6-7.
  Pair p;
  std::vector<float> got[2];
  p.onBoth([&](int r) {
    TestRuntime &c = p.rank[r];
    int64_t cols = r == 0 ? 6 : 2, first = r == 0 ? 0 : 6;
    whale_rt_tensor *part = c.f32({2, cols}, grid(2, cols, first));
    whale_rt_tensor *whole = c.make(WHALE_RT_F32, {2, 8});
    EXPECT_EQ(whale_rt_all_gather(c.ctx, 2, kWeights, 1, part, whole),
              WHALE_RT_OK)
        << whale_rt_last_error(c.ctx);
    got[r] = whale::testing::floatsOf(whole, 16);
  });
  EXPECT_EQ(got[0], grid(2, 8));
  EXPECT_EQ(got[1], grid(2, 8));
}

TEST(UnevenShards, AllToAllMovesPartsOfThreeAndOneUnitsToAnotherAxis) {
  // An [8 rows, 8 columns] whole: each rank holds its columns (6 and 2) of
  // every row and gets its rows (6 and 2) of every column, as a mixture's
  // slots go from tokens to experts on unequal devices.
  Pair p;
  std::vector<float> got[2];
  p.onBoth([&](int r) {
    TestRuntime &c = p.rank[r];
    const int64_t cols = r == 0 ? 6 : 2, first = r == 0 ? 0 : 6;
    const int64_t rows = r == 0 ? 6 : 2, firstRow = r == 0 ? 0 : 6;
    whale_rt_tensor *mine = c.f32({8, cols}, grid(8, cols, first));
    whale_rt_tensor *out = c.make(WHALE_RT_F32, {rows, 8});
    EXPECT_EQ(whale_rt_all_to_all(c.ctx, 2, kWeights, 0, 1, mine, out),
              WHALE_RT_OK)
        << whale_rt_last_error(c.ctx);
    std::vector<float> want = grid(8, 8);
    got[r] = whale::testing::floatsOf(out, rows * 8);
    EXPECT_EQ(got[r], std::vector<float>(want.begin() + firstRow * 8,
                                         want.begin() + (firstRow + rows) * 8))
        << "rank " << r;
    // A part that is not the rank's along either axis is an error.
    whale_rt_tensor *wrong = c.make(WHALE_RT_F32, {8 - rows, 8});
    EXPECT_EQ(whale_rt_all_to_all(c.ctx, 2, kWeights, 0, 1, mine, wrong),
              WHALE_RT_INVALID_ARGUMENT);
  });
}

TEST(UnevenShards, ShardSliceKeepsEachRanksUnits) {
  Pair p;
  for (int r = 0; r < 2; ++r) {
    TestRuntime &c = p.rank[r];
    int64_t cols = r == 0 ? 6 : 2, first = r == 0 ? 0 : 6;
    whale_rt_tensor *whole = c.f32({2, 8}, grid(2, 8));
    whale_rt_tensor *part = c.make(WHALE_RT_F32, {2, cols});
    ASSERT_EQ(whale_rt_shard_slice(c.ctx, 2, kWeights, 1, whole, part),
              WHALE_RT_OK)
        << whale_rt_last_error(c.ctx);
    EXPECT_EQ(whale::testing::floatsOf(part, 2 * cols), grid(2, cols, first));
  }
}

TEST(UnevenShards, APartThatIsNotTheRanksIsAnError) {
  Pair p;
  TestRuntime &c = p.rank[1];
  whale_rt_tensor *whole = c.f32({2, 8}, grid(2, 8));
  whale_rt_tensor *part = c.make(WHALE_RT_F32, {2, 6}); // rank 0's size
  EXPECT_EQ(whale_rt_shard_slice(c.ctx, 2, kWeights, 1, whole, part),
            WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(c.ctx),
               "shard_slice: the output must be this rank's part of the "
               "input along axis 1, of parts weighted 3:1, in a group that "
               "exists");
  // Weights that do not divide the extent, or are not positive.
  const int64_t three[] = {2, 1}, zero[] = {0, 4};
  EXPECT_EQ(whale_rt_shard_slice(c.ctx, 2, three, 1, whole, part),
            WHALE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(whale_rt_shard_slice(c.ctx, 2, zero, 1, whole, part),
            WHALE_RT_INVALID_ARGUMENT);
  const int64_t huge[] = {INT64_MAX, INT64_MAX};
  EXPECT_EQ(whale_rt_shard_slice(c.ctx, 2, huge, 1, whole, part),
            WHALE_RT_INVALID_ARGUMENT);
}

TEST(UnevenShards, ParameterPartsAreSlicesOfTheWhole) {
  int64_t shape[] = {4, 8};
  double normal[] = {0.0, 1.0};
  TestRuntime one(5);
  whale_rt_tensor *whole = nullptr;
  ASSERT_EQ(whale_rt_param(one.ctx, "w", WHALE_RT_INIT_NORMAL, normal, 2, 2,
                           shape, &whole),
            WHALE_RT_OK);
  std::vector<float> want = whale::testing::floatsOf(whole, 32);
  Pair p(5);
  for (int r = 0; r < 2; ++r) {
    TestRuntime &c = p.rank[r];
    whale_rt_tensor *part = nullptr;
    ASSERT_EQ(whale_rt_param_shard(c.ctx, "w", WHALE_RT_INIT_NORMAL, normal,
                                   2, 2, shape, 1, 2, kWeights, &part),
              WHALE_RT_OK)
        << whale_rt_last_error(c.ctx);
    int64_t cols = r == 0 ? 6 : 2, first = r == 0 ? 0 : 6;
    ASSERT_EQ(whale_rt_tensor_shape(part)[1], cols);
    std::vector<float> got = whale::testing::floatsOf(part, 4 * cols);
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < cols; ++j)
        EXPECT_EQ(got[i * cols + j], want[i * 8 + first + j]);
  }
}

TEST(UnevenShards, ShardedCrossEntropyOverUnevenClasses) {
  // 3 samples, 8 classes: rank 0 holds classes 0-5, rank 1 classes 6-7.
  std::vector<float> logits;
  for (int i = 0; i < 24; ++i)
    logits.push_back(std::sin(0.7f * i));
  const std::vector<int32_t> labels = {1, 6, 7};
  TestRuntime one;
  whale_rt_tensor *l = one.f32({3, 8}, logits);
  whale_rt_tensor *y = one.make(WHALE_RT_I32, {3});
  std::memcpy(whale_rt_tensor_data(y), labels.data(), 3 * sizeof(int32_t));
  whale_rt_tensor *want = one.make(WHALE_RT_F32, {3});
  ASSERT_EQ(whale_rt_cross_entropy(one.ctx, l, y, want), WHALE_RT_OK);
  Pair p;
  std::vector<float> got[2];
  p.onBoth([&](int r) {
    TestRuntime &c = p.rank[r];
    int64_t cols = r == 0 ? 6 : 2, first = r == 0 ? 0 : 6;
    std::vector<float> mine;
    for (int i = 0; i < 3; ++i)
      for (int64_t j = 0; j < cols; ++j)
        mine.push_back(logits[i * 8 + first + j]);
    whale_rt_tensor *part = c.f32({3, cols}, mine);
    whale_rt_tensor *ys = c.make(WHALE_RT_I32, {3});
    std::memcpy(whale_rt_tensor_data(ys), labels.data(), 3 * sizeof(int32_t));
    whale_rt_tensor *out = c.make(WHALE_RT_F32, {3});
    EXPECT_EQ(whale_rt_sharded_cross_entropy(c.ctx, 2, kWeights, part, ys,
                                             out),
              WHALE_RT_OK)
        << whale_rt_last_error(c.ctx);
    got[r] = whale::testing::floatsOf(out, 3);
  });
  std::vector<float> expected = whale::testing::floatsOf(want, 3);
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 3; ++i)
      EXPECT_NEAR(got[r][i], expected[i], 1e-5) << "rank " << r;
}

} // namespace
