//===- SharedPartsTest.cpp - parts several ranks of a group hold
//-----------===//
//
// whale_rt_shard_slice_shared: a group of four ranks, a value cut in two
// parts, each held by two consecutive ranks (grouped-query attention's
// keys over more ranks than key heads). Nothing moves, so each rank runs
// alone; a part of the wrong size or a count that does not divide the
// group is refused with the reason.
//
//===----------------------------------------------------------------------===//

#include "../RuntimeFixture.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace {

using whale::testing::FourReplicas;
using whale::testing::TestRuntime;

/// [2, heads, 3]: entry (b, h, e) is 100 * b + 10 * h + e.
std::vector<float> heads(int64_t count, int64_t first = 0) {
  std::vector<float> v;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = first; h < first + count; ++h)
      for (int64_t e = 0; e < 3; ++e)
        v.push_back(float(100 * b + 10 * h + e));
  return v;
}

/// Every rank's part of [2, heads, 3] in `parts` parts: rank r holds the
/// heads / parts heads from (r * parts / 4) * heads / parts.
void expectParts(int64_t count, int32_t parts) {
  FourReplicas g;
  const int64_t each = count / parts;
  for (int r = 0; r < 4; ++r) {
    TestRuntime &c = g.rank[r];
    whale_rt_tensor *whole = c.f32({2, count, 3}, heads(count));
    whale_rt_tensor *part = c.make(WHALE_RT_F32, {2, each, 3});
    ASSERT_EQ(whale_rt_shard_slice_shared(c.ctx, 4, parts, 1, whole, part),
              WHALE_RT_OK)
        << whale_rt_last_error(c.ctx);
    EXPECT_EQ(whale::testing::floatsOf(part, static_cast<size_t>(6 * each)),
              heads(each, r * parts / 4 * each))
        << "rank " << r;
  }
}

TEST(SharedParts, EachPairOfRanksHoldsOneOfTwoParts) { expectParts(4, 2); }

TEST(SharedParts, OnePartIsTheWholeOnEveryRank) { expectParts(1, 1); }

TEST(SharedParts, PartsThatDoNotFitAreRefused) {
  FourReplicas g;
  TestRuntime &c = g.rank[3];
  whale_rt_tensor *whole = c.f32({2, 4, 3}, heads(4));
  whale_rt_tensor *quarter = c.make(WHALE_RT_F32, {2, 1, 3});
  EXPECT_EQ(whale_rt_shard_slice_shared(c.ctx, 4, 2, 1, whole, quarter),
            WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(c.ctx),
               "shard_slice: the output must be one of 2 equal parts of the "
               "input along axis 1, each held by 2 of a group of 4 ranks "
               "that exists");
  whale_rt_tensor *half = c.make(WHALE_RT_F32, {2, 2, 3});
  for (int32_t parts : {0, 3, 4, -1})
    EXPECT_EQ(whale_rt_shard_slice_shared(c.ctx, 4, parts, 1, whole, half),
              WHALE_RT_INVALID_ARGUMENT)
        << parts;
  EXPECT_EQ(whale_rt_shard_slice_shared(c.ctx, 8, 2, 1, whole, half),
            WHALE_RT_INVALID_ARGUMENT); // no group of 8
  EXPECT_EQ(whale_rt_shard_slice_shared(c.ctx, 4, 2, 3, whole, half),
            WHALE_RT_INVALID_ARGUMENT); // no axis 3
}

} // namespace
