//===- TwoRankScenarios.h - collectives and sends two ranks make -*- C++
//-*-===//
//
// The same calls through the C ABI, for each way a group's collectives and
// a pipeline's sends can go (the host, a device library's stand-in, the
// memory of a device the ranks share): each test binds two ranks on its
// devices, runs a scenario, checks its results here and what its devices
// were asked to do itself.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_TEST_UNIT_RUNTIME_TWORANKSCENARIOS_H
#define WHALE_TEST_UNIT_RUNTIME_TWORANKSCENARIOS_H

#include "../RuntimeFixture.h"
#include "runtime/capi/CApiInternal.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace whale::testing {

inline std::vector<float> valuesOf(whale_rt_tensor *t) {
  const float *p = TestRuntime::data<float>(t);
  return std::vector<float>(p, p + t->tensor.numel());
}

/// Two replicas: ZeRO's gradients reduced to their owners (the second
/// tensor owned by position 0, the first and third by 1), the owners'
/// tensors handed to the other, and an all-reduce started and waited for;
/// each rank's results checked.
inline void zeroBucketsScenario(TwoRanks &p) {
  std::vector<float> reduced[2][3], gathered[2][3], summed[2];
  p.onBoth([&](int r) {
    TestRuntime &t = p.rank[r];
    const float k = float(r + 1);
    whale_rt_tensor *ts[] = {t.f32({3}, {1 * k, 2 * k, 3 * k}),
                             t.f32({2, 2}, {10 * k, 20 * k, 30 * k, 40 * k}),
                             t.f32({1}, {100 * k})};
    const int32_t owners[] = {1, 0, 1};
    ASSERT_EQ(whale_rt_reduce_to_owners(t.ctx, WHALE_RT_GROUP_REPLICAS, 0, 3,
                                        ts, owners),
              WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    for (int i = 0; i < 3; ++i)
      reduced[r][i] = valuesOf(ts[i]);
    // Each owner's tensors now differ from the other's copy: the gather
    // hands each owner's on.
    ASSERT_EQ(whale_rt_broadcast_from_owners(t.ctx, WHALE_RT_GROUP_REPLICAS, 0,
                                             3, ts, owners),
              WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    for (int i = 0; i < 3; ++i)
      gathered[r][i] = valuesOf(ts[i]);
    whale_rt_tensor *w = t.f32({2}, {1000 * k, 2000 * k});
    int64_t request = -1;
    ASSERT_EQ(whale_rt_all_reduce_start(t.ctx, WHALE_RT_GROUP_REPLICAS, 0, 1,
                                        &w, &request),
              WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    ASSERT_EQ(whale_rt_all_reduce_wait(t.ctx, request), WHALE_RT_OK);
    summed[r] = valuesOf(w);
  });
  EXPECT_EQ(reduced[0][1], (std::vector<float>{30, 60, 90, 120}));
  EXPECT_EQ(reduced[1][0], (std::vector<float>{3, 6, 9}));
  EXPECT_EQ(reduced[1][2], (std::vector<float>{300}));
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(gathered[r][0], (std::vector<float>{3, 6, 9})) << r;
    EXPECT_EQ(gathered[r][1], (std::vector<float>{30, 60, 90, 120})) << r;
    EXPECT_EQ(gathered[r][2], (std::vector<float>{300})) << r;
    EXPECT_EQ(summed[r], (std::vector<float>{3000, 6000})) << r;
  }
}

/// Two replicas as a shard group of 2: a row-parallel product's partial
/// sums added, uneven parts (3 : 1 of 4 columns) gathered along the
/// columns, and X[i][j] = 4i + j held by columns exchanged to be held by
/// rows; each rank's results checked.
inline void shardGroupScenario(TwoRanks &p) {
  std::vector<float> sums[2], joined[2], exchanged[2];
  p.onBoth([&](int r) {
    TestRuntime &t = p.rank[r];
    const float k = float(r + 1);
    whale_rt_tensor *part = t.f32({3}, {1 * k, 2 * k, 3 * k});
    whale_rt_tensor *sum = t.f32({3}, {0, 0, 0});
    ASSERT_EQ(whale_rt_shard_sum(t.ctx, 2, part, sum), WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    sums[r] = valuesOf(sum);
    const int64_t weights[] = {3, 1};
    whale_rt_tensor *mine =
        r == 0 ? t.f32({2, 3}, {1, 2, 3, 4, 5, 6}) : t.f32({2, 1}, {7, 8});
    whale_rt_tensor *whole = t.f32({2, 4}, std::vector<float>(8, 0));
    ASSERT_EQ(whale_rt_all_gather(t.ctx, 2, weights, 1, mine, whole),
              WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    joined[r] = valuesOf(whole);
    std::vector<float> columns;
    for (int i = 0; i < 4; ++i)
      for (int j = 2 * r; j < 2 * r + 2; ++j)
        columns.push_back(float(4 * i + j));
    whale_rt_tensor *byColumns = t.f32({4, 2}, columns);
    whale_rt_tensor *byRows = t.f32({2, 4}, std::vector<float>(8, 0));
    ASSERT_EQ(whale_rt_all_to_all(t.ctx, 2, nullptr, 0, 1, byColumns, byRows),
              WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    exchanged[r] = valuesOf(byRows);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(sums[r], (std::vector<float>{3, 6, 9})) << r;
    EXPECT_EQ(joined[r], (std::vector<float>{1, 2, 3, 7, 4, 5, 6, 8})) << r;
    std::vector<float> rows;
    for (int i = 2 * r; i < 2 * r + 2; ++i)
      for (int j = 0; j < 4; ++j)
        rows.push_back(float(4 * i + j));
    EXPECT_EQ(exchanged[r], rows) << r;
  }
}

/// Two stages: stage 0 sends tag 7 twice with tag 9 (i32) between, and
/// changes the last sent tensor at once; stage 1 receives tag 9 first,
/// then tag 7 twice, and replies with tag 11. Checks what arrived.
inline void pipelineScenario(TwoRanks &p) {
  std::vector<float> first, again, back;
  std::vector<int32_t> ids;
  p.onBoth([&](int r) {
    TestRuntime &t = p.rank[r];
    if (r == 0) {
      whale_rt_tensor *a = t.f32({3}, {1, 2, 3});
      whale_rt_tensor *ids9 = t.make(WHALE_RT_I32, {2});
      TestRuntime::data<int32_t>(ids9)[0] = 4;
      TestRuntime::data<int32_t>(ids9)[1] = 5;
      whale_rt_tensor *b = t.f32({3}, {10, 20, 30});
      for (whale_rt_tensor *x : {a, ids9, b})
        ASSERT_EQ(whale_rt_send(t.ctx, 1, x == ids9 ? 9 : 7, x), WHALE_RT_OK)
            << whale_rt_last_error(t.ctx);
      // The sent tensor may change at once.
      TestRuntime::data<float>(b)[0] = -1;
      whale_rt_tensor *reply = t.f32({2}, {0, 0});
      ASSERT_EQ(whale_rt_recv(t.ctx, 1, 11, reply), WHALE_RT_OK)
          << whale_rt_last_error(t.ctx);
      back = valuesOf(reply);
      return;
    }
    whale_rt_tensor *ids9 = t.make(WHALE_RT_I32, {2});
    ASSERT_EQ(whale_rt_recv(t.ctx, 0, 9, ids9), WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    ids.assign(TestRuntime::data<int32_t>(ids9),
               TestRuntime::data<int32_t>(ids9) + 2);
    whale_rt_tensor *x = t.f32({3}, {0, 0, 0});
    ASSERT_EQ(whale_rt_recv(t.ctx, 0, 7, x), WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    first = valuesOf(x);
    ASSERT_EQ(whale_rt_recv(t.ctx, 0, 7, x), WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    again = valuesOf(x);
    whale_rt_tensor *reply = t.f32({2}, {42, 43});
    ASSERT_EQ(whale_rt_send(t.ctx, 0, 11, reply), WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
  });
  EXPECT_EQ(ids, (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(first, (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(again, (std::vector<float>{10, 20, 30}));
  EXPECT_EQ(back, (std::vector<float>{42, 43}));
}

/// Stage 0 sends 2 floats with tag 5, stage 1 asks for 3: refused, with
/// the host mailbox's words.
inline void wrongSizeRecvScenario(TwoRanks &p) {
  std::string error;
  p.onBoth([&](int r) {
    TestRuntime &t = p.rank[r];
    if (r == 0) {
      ASSERT_EQ(whale_rt_send(t.ctx, 1, 5, t.f32({2}, {1, 2})), WHALE_RT_OK)
          << whale_rt_last_error(t.ctx);
      return;
    }
    EXPECT_EQ(whale_rt_recv(t.ctx, 0, 5, t.f32({3}, {0, 0, 0})),
              WHALE_RT_INVALID_ARGUMENT);
    error = whale_rt_last_error(t.ctx);
  });
  EXPECT_NE(error.find("rank 0 sent 2 f32 with tag 5 where 3 f32 were "
                       "expected"),
            std::string::npos)
      << error;
}

} // namespace whale::testing

#endif
