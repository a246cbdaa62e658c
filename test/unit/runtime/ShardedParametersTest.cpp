//===- ShardedParametersTest.cpp - ZeRO stage 3's calls on two ranks ------===//
//
// Parameters kept by their owners alone: the other rank's handle has no
// values, a gather gives both the owner's bits, and a gradient sent to its
// owner is freed on the sender as soon as its bucket is packed; a
// micro-batch's gradients are added into their owners' sums (stage 2).
//
//===----------------------------------------------------------------------===//

#include "../RuntimeFixture.h"
#include "runtime/capi/CApiInternal.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

using whale::testing::TestRuntime;
using whale::testing::TwoReplicas;

std::vector<float> valuesOf(whale_rt_tensor *t) {
  const float *p = TestRuntime::data<float>(t);
  return std::vector<float>(p, p + t->tensor.numel());
}

TEST(ShardedParameters, AGatherGivesEveryRankTheOwnersValues) {
  TwoReplicas p;
  std::vector<float> got[2][2];
  int64_t elsewhere[2] = {-1, -1};
  p.onBoth([&](int r) {
    TestRuntime &t = p.rank[r];
    // "a" lives on position 0, "b" on position 1: each rank makes its own
    // (normal initialization) and holds a handle without values of the
    // other's.
    const double normal[] = {0.0, 1.0};
    const int64_t shapeA[] = {2, 3}, shapeB[] = {4};
    whale_rt_tensor *a = nullptr, *b = nullptr;
    if (r == 0) {
      ASSERT_EQ(whale_rt_param(t.ctx, "m/a", WHALE_RT_INIT_NORMAL, normal, 2, 2,
                               shapeA, &a),
                WHALE_RT_OK);
      ASSERT_EQ(whale_rt_param_elsewhere(t.ctx, "m/b", &b), WHALE_RT_OK);
      elsewhere[r] = b->tensor.numel();
    } else {
      ASSERT_EQ(whale_rt_param_elsewhere(t.ctx, "m/a", &a), WHALE_RT_OK);
      ASSERT_EQ(whale_rt_param(t.ctx, "m/b", WHALE_RT_INIT_NORMAL, normal, 2, 1,
                               shapeB, &b),
                WHALE_RT_OK);
      elsewhere[r] = a->tensor.numel();
    }
    EXPECT_EQ(whale_rt_param_count(t.ctx), 1);
    whale_rt_tensor *params[] = {a, b};
    whale_rt_tensor *outs[] = {t.f32({2, 3}, std::vector<float>(6, -1.f)),
                               t.f32({4}, std::vector<float>(4, -1.f))};
    const int32_t owners[] = {0, 1};
    ASSERT_EQ(whale_rt_gather_params(t.ctx, WHALE_RT_GROUP_REPLICAS, 0, 2,
                                     params, owners, nullptr, outs),
              WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    got[r][0] = valuesOf(outs[0]);
    got[r][1] = valuesOf(outs[1]);
  });
  EXPECT_EQ(elsewhere[0], 0);
  EXPECT_EQ(elsewhere[1], 0);
  // Both ranks see the same values, and they are the initializer's (not
  // the -1 the outputs held).
  EXPECT_EQ(got[0][0], got[1][0]);
  EXPECT_EQ(got[0][1], got[1][1]);
  for (const std::vector<float> &v : {got[0][0], got[0][1]})
    for (float x : v)
      EXPECT_NE(x, -1.f);
}

TEST(ShardedParameters, AHandleElsewhereFreesAnEarlierPlansCopy) {
  TestRuntime t(1);
  const int64_t shape[] = {3};
  whale_rt_tensor *w = nullptr;
  ASSERT_EQ(whale_rt_param(t.ctx, "m/w", WHALE_RT_INIT_ZEROS, nullptr, 0, 1,
                           shape, &w),
            WHALE_RT_OK);
  ASSERT_EQ(whale_rt_param_count(t.ctx), 1);
  whale_rt_tensor *h = nullptr;
  ASSERT_EQ(whale_rt_param_elsewhere(t.ctx, "m/w", &h), WHALE_RT_OK);
  EXPECT_EQ(whale_rt_param_count(t.ctx), 0);
  EXPECT_EQ(h->tensor.numel(), 0);
  // The same handle from step to step.
  whale_rt_tensor *again = nullptr;
  ASSERT_EQ(whale_rt_param_elsewhere(t.ctx, "m/w", &again), WHALE_RT_OK);
  EXPECT_EQ(again, h);
}

TEST(ShardedParameters, AGatherRefusesAnOwnerOutsideItsGroup) {
  TwoReplicas p;
  p.onBoth([&](int r) {
    TestRuntime &t = p.rank[r];
    whale_rt_tensor *w = t.f32({2}, {1, 2});
    whale_rt_tensor *out = t.f32({2}, {0, 0});
    const int32_t owners[] = {2};
    EXPECT_EQ(whale_rt_gather_params(t.ctx, WHALE_RT_GROUP_REPLICAS, 0, 1, &w,
                                     owners, nullptr, &out),
              WHALE_RT_INVALID_ARGUMENT);
    EXPECT_NE(std::string(whale_rt_last_error(t.ctx)).find("owner"),
              std::string::npos);
  });
}

// Stage 2's saving: a started reduce to owners packs the bucket, and the
// gradients each rank sent for the other owner are freed at once; each
// owner gets its sums back after the wait.
TEST(ShardedParameters, AStartedReduceToOwnersFreesWhatOthersOwn) {
  TwoReplicas p;
  std::vector<float> owned[2];
  int64_t freed[2] = {-1, -1};
  p.onBoth([&](int r) {
    TestRuntime &t = p.rank[r];
    const float k = float(r + 1);
    whale_rt_tensor *g[] = {t.f32({3}, {1 * k, 2 * k, 3 * k}),
                            t.f32({2}, {10 * k, 20 * k})};
    const int32_t owners[] = {1, 0};
    int64_t request = 0;
    ASSERT_EQ(whale_rt_reduce_to_owners_start(t.ctx, WHALE_RT_GROUP_REPLICAS, 0,
                                              2, g, owners, &request),
              WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    whale_rt_tensor *mine = g[r == 0 ? 1 : 0], *other = g[r == 0 ? 0 : 1];
    freed[r] = other->tensor.numel();
    ASSERT_EQ(whale_rt_all_reduce_wait(t.ctx, request), WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    owned[r] = valuesOf(mine);
  });
  EXPECT_EQ(freed[0], 0);
  EXPECT_EQ(freed[1], 0);
  EXPECT_EQ(owned[0], (std::vector<float>{30, 60}));
  EXPECT_EQ(owned[1], (std::vector<float>{3, 6, 9}));
}

// Stage 2 while micro-batches accumulate: a micro-batch's gradients summed
// over the group on their owners (a started reduce, as the overlap runs
// it) and added into the owner's running sum; every gradient, and the sums
// a rank does not own, freed after.
TEST(ShardedParameters, AMicroBatchIsAddedIntoItsOwnersSums) {
  TwoReplicas p;
  std::vector<float> owned[2];
  int64_t left[2][3] = {{-1, -1, -1}, {-1, -1, -1}};
  p.onBoth([&](int r) {
    TestRuntime &t = p.rank[r];
    const float k = float(r + 1);
    whale_rt_tensor *g[] = {t.f32({2}, {1 * k, 2 * k}), t.f32({1}, {10 * k})};
    whale_rt_tensor *sums[] = {t.f32({2}, {100, 200}), t.f32({1}, {1000})};
    const int32_t owners[] = {1, 0};
    int64_t request = 0;
    ASSERT_EQ(whale_rt_reduce_to_owners_start(t.ctx, WHALE_RT_GROUP_REPLICAS, 0,
                                              2, g, owners, &request),
              WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    ASSERT_EQ(whale_rt_all_reduce_wait(t.ctx, request), WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    ASSERT_EQ(whale_rt_add_into_owners(t.ctx, WHALE_RT_GROUP_REPLICAS, 0, 2, g,
                                       sums, owners),
              WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    owned[r] = valuesOf(sums[r == 0 ? 1 : 0]);
    left[r][0] = g[0]->tensor.numel() + g[1]->tensor.numel();
    left[r][1] = sums[r == 0 ? 0 : 1]->tensor.numel(); // the other's sum
    left[r][2] = sums[r == 0 ? 1 : 0]->tensor.numel();
  });
  EXPECT_EQ(owned[0], (std::vector<float>{1030}));
  EXPECT_EQ(owned[1], (std::vector<float>{103, 206}));
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(left[r][0], 0) << r;
    EXPECT_EQ(left[r][1], 0) << r;
    EXPECT_GT(left[r][2], 0) << r;
  }
}

} // namespace
