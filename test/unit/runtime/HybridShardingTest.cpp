//===- HybridShardingTest.cpp - sharding groups of four replicas ----------===//
//
// Hybrid sharding (WHALE_RT_GROUP_SHARDING): four replicas in two sharding
// groups of two. Owners are positions in a sharding group; a reduce to
// owners sums over all four (in the group, then over the owner's copy in
// the other group), blocking or started; ownership, gathers and clipping
// stay in the group; a size that does not divide the replicas is refused.
//
//===----------------------------------------------------------------------===//

#include "../RuntimeFixture.h"
#include "runtime/capi/CApiInternal.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace {

using whale::testing::FourReplicas;
using whale::testing::TestRuntime;

constexpr int32_t kPairs = WHALE_RT_GROUP_SHARDING(WHALE_RT_GROUP_REPLICAS, 2);

std::vector<float> valuesOf(whale_rt_tensor *t) {
  const float *p = TestRuntime::data<float>(t);
  return std::vector<float>(p, p + t->tensor.numel());
}

// Rank r holds (r + 1) times each gradient: the sums over all four are 10
// times them. Tensor 0 is owned at position 1 of each sharding group
// (ranks 1 and 3), tensor 1 at position 0 (ranks 0 and 2): every owner
// gets the sum over the four, in line and started.
TEST(HybridSharding, AReduceToOwnersSumsOverEveryCopy) {
  for (bool started : {false, true}) {
    SCOPED_TRACE(started ? "started" : "in line");
    FourReplicas p;
    std::vector<float> owned[4];
    p.onAll([&](int r) {
      TestRuntime &t = p.rank[r];
      const float k = float(r + 1);
      whale_rt_tensor *g[] = {t.f32({3}, {1 * k, 2 * k, 3 * k}),
                              t.f32({2}, {10 * k, 20 * k})};
      const int32_t owners[] = {1, 0};
      if (started) {
        int64_t request = 0;
        ASSERT_EQ(whale_rt_reduce_to_owners_start(t.ctx, kPairs, 0, 2, g,
                                                  owners, &request),
                  WHALE_RT_OK)
            << whale_rt_last_error(t.ctx);
        ASSERT_EQ(whale_rt_all_reduce_wait(t.ctx, request), WHALE_RT_OK)
            << whale_rt_last_error(t.ctx);
      } else {
        ASSERT_EQ(whale_rt_reduce_to_owners(t.ctx, kPairs, 0, 2, g, owners),
                  WHALE_RT_OK)
            << whale_rt_last_error(t.ctx);
      }
      owned[r] = valuesOf(g[r % 2 == 0 ? 1 : 0]);
    });
    for (int r : {0, 2})
      EXPECT_EQ(owned[r], (std::vector<float>{100, 200})) << "rank " << r;
    for (int r : {1, 3})
      EXPECT_EQ(owned[r], (std::vector<float>{10, 20, 30})) << "rank " << r;
  }
}

// Ownership and gathers are the sharding group's: rank 2 is position 0 of
// the second group, and a gather there reads ranks 2 and 3 alone.
TEST(HybridSharding, OwnersAndGathersStayInTheGroup) {
  FourReplicas p;
  int32_t mine[4][2] = {};
  std::vector<float> got[4];
  p.onAll([&](int r) {
    TestRuntime &t = p.rank[r];
    for (int32_t owner = 0; owner < 2; ++owner)
      ASSERT_EQ(whale_rt_owns(t.ctx, kPairs, 0, owner, &mine[r][owner]),
                WHALE_RT_OK)
          << whale_rt_last_error(t.ctx);
    // Each rank's part holds its rank number; position 0 owns "a".
    whale_rt_tensor *a = nullptr;
    if (r % 2 == 0)
      a = t.f32({2}, {float(r), float(r)});
    else
      ASSERT_EQ(whale_rt_param_elsewhere(t.ctx, "m/a", &a), WHALE_RT_OK);
    whale_rt_tensor *params[] = {a};
    whale_rt_tensor *outs[] = {t.f32({2}, {-1, -1})};
    const int32_t owners[] = {0};
    ASSERT_EQ(whale_rt_gather_params(t.ctx, kPairs, 0, 1, params, owners,
                                     nullptr, outs),
              WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    got[r] = valuesOf(outs[0]);
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(mine[r][0], r % 2 == 0 ? 1 : 0) << r;
    EXPECT_EQ(mine[r][1], r % 2 == 1 ? 1 : 0) << r;
    const float owner = float(r - r % 2);
    EXPECT_EQ(got[r], (std::vector<float>{owner, owner})) << r;
  }
}

// Clipping under hybrid sharding: the owned gradients hold the same sums in
// both groups, so their squares are summed over one group's replicas: the
// norm is that of one copy of [3, 4] (owned at 0) and [12] (owned at 1).
TEST(HybridSharding, ClippingCountsOneCopyOfEachOwnedGradient) {
  FourReplicas p;
  double norms[4] = {};
  p.onAll([&](int r) {
    TestRuntime &t = p.rank[r];
    whale_rt_tensor *g[] = {t.f32({2}, {3, 4}), t.f32({1}, {12})};
    const int32_t owners[] = {0, 1};
    ASSERT_EQ(whale_rt_clip_grad_norm_owned(t.ctx, -1, 0, 2, 2, g, nullptr,
                                            owners, 1e9, &norms[r]),
              WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
  });
  for (int r = 0; r < 4; ++r)
    EXPECT_DOUBLE_EQ(norms[r], 13.0) << r;
}

// Groups of three do not divide four replicas.
TEST(HybridSharding, AGroupSizeThatDoesNotDivideIsRefused) {
  FourReplicas p;
  whale_rt_tensor *g[] = {p.rank[0].f32({1}, {1})};
  const int32_t owners[] = {0};
  EXPECT_EQ(whale_rt_reduce_to_owners(
                p.rank[0].ctx,
                WHALE_RT_GROUP_SHARDING(WHALE_RT_GROUP_REPLICAS, 3), 0, 1, g,
                owners),
            WHALE_RT_INVALID_ARGUMENT);
  int32_t mine = 0;
  EXPECT_EQ(whale_rt_owns(p.rank[0].ctx,
                          WHALE_RT_GROUP_SHARDING(WHALE_RT_GROUP_REPLICAS, 3),
                          0, 0, &mine),
            WHALE_RT_INVALID_ARGUMENT);
}

} // namespace
