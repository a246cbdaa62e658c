//===- AsyncAllReduceTest.cpp - all-reduces that run while ranks compute --===//
//
// The collective thread's queue (order, statuses, settling a group), and
// whale_rt_all_reduce_start / _wait through the C ABI on two ranks as
// threads: the sums are the blocking all-reduce's, a blocking collective
// over the same group pairs with the right one on the other rank, and bad
// requests are errors.
//
//===----------------------------------------------------------------------===//

#include "../RuntimeFixture.h"
#include "runtime/comm/CollectiveQueue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace {

using whale::rt::CollectiveQueue;
using whale::rt::Status;
using whale::testing::TestRuntime;

TEST(CollectiveQueue, RunsInTheOrderStartedAndReturnsEachStatus) {
  CollectiveQueue q;
  std::vector<int> order;
  std::mutex m;
  auto job = [&](int i, Status st) {
    return [&, i, st] {
      std::lock_guard<std::mutex> lock(m);
      order.push_back(i);
      return st;
    };
  };
  int64_t a = q.start({0, 1}, job(1, Status::ok()));
  int64_t b = q.start({0, 2}, job(2, Status::internal("peer 2 left")));
  int64_t c = q.start({0, 1}, job(3, Status::ok()));
  EXPECT_EQ(q.pending(), 3u);
  // Waited for out of order, they still ran in order.
  EXPECT_TRUE(q.wait(c).isOk());
  Status sb = q.wait(b);
  EXPECT_FALSE(sb.isOk());
  EXPECT_EQ(sb.message(), "peer 2 left");
  EXPECT_TRUE(q.wait(a).isOk());
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(q.pending(), 0u);
}

TEST(CollectiveQueue, WaitingForAnUnknownOrFinishedIdIsAnError) {
  CollectiveQueue q;
  EXPECT_EQ(q.wait(7).code(), Status::Code::InvalidArgument);
  int64_t id = q.start({0}, [] { return Status::ok(); });
  EXPECT_TRUE(q.wait(id).isOk());
  Status again = q.wait(id);
  EXPECT_EQ(again.code(), Status::Code::InvalidArgument);
  EXPECT_NE(again.message().find("waited for already"), std::string::npos);
}

TEST(CollectiveQueue, SettleWaitsForTheGroupsCollectivesOnly) {
  CollectiveQueue q;
  std::atomic<bool> release{false}, firstDone{false};
  int64_t slow = q.start({0, 1}, [&] {
    while (!release)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    firstDone = true;
    return Status::ok();
  });
  // Nothing over group {0, 2} is pending: settling it returns at once.
  EXPECT_TRUE(q.settle({0, 2}).isOk());
  EXPECT_FALSE(firstDone);
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    release = true;
  });
  EXPECT_TRUE(q.settle({0, 1}).isOk());
  EXPECT_TRUE(firstDone);
  releaser.join();
  // Settled, it is still to be waited for.
  EXPECT_EQ(q.pending(), 1u);
  EXPECT_TRUE(q.wait(slow).isOk());
}

TEST(CollectiveQueue, GoingAwayDropsWhatHasNotBegun) {
  std::atomic<int> ran{0};
  std::atomic<bool> began{false};
  {
    CollectiveQueue q;
    q.start({0}, [&] {
      began = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ++ran;
      return Status::ok();
    });
    q.start({0}, [&] {
      ++ran;
      return Status::ok();
    });
    while (!began)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // The running one ended; the second was dropped, not run after its queue
  // was gone.
  EXPECT_EQ(ran.load(), 1);
}

using Replicas = whale::testing::TwoReplicas;

TEST(AsyncAllReduce, StartedSumsMatchTheBlockingOnesAndPairInOrder) {
  Replicas p;
  std::vector<float> a[2], b[2], c[2], before[2];
  p.onBoth([&](int r) {
    TestRuntime &t = p.rank[r];
    const float k = float(r + 1);
    whale_rt_tensor *x = t.f32({3}, {1 * k, 2 * k, 3 * k});
    whale_rt_tensor *y = t.f32({2, 2}, {10 * k, 20 * k, 30 * k, 40 * k});
    whale_rt_tensor *z = t.f32({1}, {100 * k});
    whale_rt_tensor *bucket[] = {x, y};
    int64_t first = -1, second = -1;
    ASSERT_EQ(whale_rt_all_reduce_start(t.ctx, WHALE_RT_GROUP_REPLICAS, 0, 2,
                                        bucket, &first),
              WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    ASSERT_GT(first, 0);
    // Until its wait, a started tensor holds the rank's own values.
    before[r] = whale::testing::floatsOf(x, 3);
    ASSERT_EQ(whale_rt_all_reduce_start(t.ctx, WHALE_RT_GROUP_REPLICAS, 0, 1,
                                        &z, &second),
              WHALE_RT_OK);
    // A blocking all-reduce over the same group after two started ones:
    // it must meet the other rank's blocking one, not a started one.
    whale_rt_tensor *w = t.f32({2}, {1000 * k, 2000 * k});
    ASSERT_EQ(whale_rt_all_reduce(t.ctx, WHALE_RT_GROUP_REPLICAS, 1, &w),
              WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    c[r] = whale::testing::floatsOf(w, 2);
    ASSERT_EQ(whale_rt_all_reduce_wait(t.ctx, second), WHALE_RT_OK);
    ASSERT_EQ(whale_rt_all_reduce_wait(t.ctx, first), WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    a[r] = whale::testing::floatsOf(x, 3);
    b[r] = whale::testing::floatsOf(y, 4);
    b[r].push_back(whale::testing::floatsOf(z, 1)[0]);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(before[r], (std::vector<float>{r + 1.f, 2 * (r + 1.f),
                                             3 * (r + 1.f)}));
    EXPECT_EQ(a[r], (std::vector<float>{3, 6, 9}));
    EXPECT_EQ(b[r], (std::vector<float>{30, 60, 90, 120, 300}));
    EXPECT_EQ(c[r], (std::vector<float>{3000, 6000}));
  }
}

TEST(AsyncAllReduce, ShardPeersAreTheRanksHoldingTheSamePart) {
  // Two replicas in shard groups of one: each is its own part's only
  // other holder, so the peers are both ranks.
  Replicas p;
  std::vector<float> got[2];
  p.onBoth([&](int r) {
    TestRuntime &t = p.rank[r];
    whale_rt_tensor *x = t.f32({2}, {float(r), 1});
    int64_t id = -1;
    ASSERT_EQ(whale_rt_all_reduce_start(t.ctx, WHALE_RT_GROUP_SHARD_PEERS, 1,
                                        1, &x, &id),
              WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    ASSERT_EQ(whale_rt_all_reduce_wait(t.ctx, id), WHALE_RT_OK);
    got[r] = whale::testing::floatsOf(x, 2);
  });
  EXPECT_EQ(got[0], (std::vector<float>{1, 2}));
  EXPECT_EQ(got[1], (std::vector<float>{1, 2}));
}

TEST(AsyncAllReduce, ANewStepForgetsWhatAFailedStepStarted) {
  Replicas p;
  p.onBoth([&](int r) {
    TestRuntime &t = p.rank[r];
    whale_rt_tensor *x = t.f32({1}, {float(r + 1)});
    int64_t id = -1;
    ASSERT_EQ(whale_rt_all_reduce_start(t.ctx, WHALE_RT_GROUP_REPLICAS, 0, 1,
                                        &x, &id),
              WHALE_RT_OK);
    // The step fails before its wait; the driver sets up the next one.
    ASSERT_EQ(whale_rt_set_train_state(t.ctx, 2, 1.0), WHALE_RT_OK);
    EXPECT_EQ(whale_rt_all_reduce_wait(t.ctx, id), WHALE_RT_INVALID_ARGUMENT);
    // The sum never reached the tensor; the next step's all-reduces pair.
    EXPECT_EQ(whale::testing::floatsOf(x, 1)[0], float(r + 1));
    ASSERT_EQ(whale_rt_all_reduce_start(t.ctx, WHALE_RT_GROUP_REPLICAS, 0, 1,
                                        &x, &id),
              WHALE_RT_OK);
    ASSERT_EQ(whale_rt_all_reduce_wait(t.ctx, id), WHALE_RT_OK);
    EXPECT_EQ(whale::testing::floatsOf(x, 1)[0], 3.f);
  });
}

TEST(AsyncAllReduce, BadRequestsAndGroupsAreErrors) {
  Replicas p;
  TestRuntime &t = p.rank[0];
  whale_rt_tensor *x = t.f32({1}, {1});
  EXPECT_EQ(whale_rt_all_reduce_wait(t.ctx, 42), WHALE_RT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(whale_rt_last_error(t.ctx)).find("no all-reduce 42 was started"),
            std::string::npos);
  EXPECT_EQ(whale_rt_all_reduce_start(t.ctx, WHALE_RT_GROUP_REPLICAS, 0, 1, &x,
                                      nullptr),
            WHALE_RT_INVALID_ARGUMENT);
  int64_t id = -1;
  EXPECT_EQ(whale_rt_all_reduce_start(t.ctx, 9, 0, 1, &x, &id),
            WHALE_RT_INVALID_ARGUMENT);
  // Shard groups of 3 do not divide 2 replicas.
  EXPECT_EQ(whale_rt_all_reduce_start(t.ctx, WHALE_RT_GROUP_SHARD_PEERS, 3, 1,
                                      &x, &id),
            WHALE_RT_INVALID_ARGUMENT);
  // A group of one has nothing to sum: request 0, whose wait is a no-op.
  TestRuntime alone(1);
  whale_rt_tensor *y = alone.f32({1}, {5});
  int64_t none = -1;
  std::unique_ptr<whale_rt_comm, void (*)(whale_rt_comm *)> one{
      whale_rt_comm_create(1, 10.0), whale_rt_comm_destroy};
  const int32_t grid[] = {0};
  ASSERT_EQ(whale_rt_context_bind(alone.ctx, one.get(), 1, 1, grid, 0, 0),
            WHALE_RT_OK);
  EXPECT_EQ(whale_rt_all_reduce_start(alone.ctx, WHALE_RT_GROUP_REPLICAS, 0, 1,
                                      &y, &none),
            WHALE_RT_OK);
  EXPECT_EQ(none, 0);
  EXPECT_EQ(whale_rt_all_reduce_wait(alone.ctx, none), WHALE_RT_OK);
  EXPECT_EQ(whale::testing::floatsOf(y, 1)[0], 5.f);
}

} // namespace
