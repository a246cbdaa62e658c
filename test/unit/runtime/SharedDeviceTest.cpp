//===- SharedDeviceTest.cpp - ranks of one process sharing one device -----===//
//
// Ranks on one GPU in a process (two contexts of it, or shares of its SMs)
// reduce in each other's memory and hand pipeline sends over as blocks
// (runtime/comm/SharedDeviceGroup.h). No GPU runs here: CPU devices that
// claim the same physical device stand in, and run the runtime's own
// member sums and blocks (CpuDevice's). Checked:
//  - each member's share of the work, for every bucket operation, and what
//    is refused before any member waits for another;
//  - three members' sums bit for bit as the host communicator adds them
//    (the order matters in floats), owners' parts and exchanges as well;
//  - through the C ABI on two ranks as threads: ZeRO's buckets, plain and
//    started all-reduces, a shard group's sums, gathers and exchanges, and
//    a pipeline's sends in any order, all on the shared path (the stand-in
//    counts its calls) with the host path's results;
//  - a receive of another size refused with the host's words, its block
//    freed all the same.
//
//===----------------------------------------------------------------------===//

#include "../RuntimeFixture.h"
#include "runtime/capi/CApiInternal.h"
#include "runtime/comm/SharedDeviceGroup.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>

namespace {

using whale::rt::CpuDevice;
using whale::rt::Device;
using whale::rt::DType;
using whale::rt::InProcessCommunicator;
using whale::rt::Status;
using whale::testing::TestRuntime;
using Op = Device::BucketOp;

/// A CPU device that says it shares physical device 0 with every other
/// such device, and counts what the shared path asked of it.
class SharedStandIn : public CpuDevice {
public:
  explicit SharedStandIn(int id)
      : CpuDevice("shared:" + std::to_string(id), {}) {}
  int collectiveDevice() const override { return 0; }
  Status sumMembers(const std::vector<MemberSum> &jobs) override {
    ++sums;
    return CpuDevice::sumMembers(jobs);
  }
  Status markQueued(int slot, int64_t &marker) override {
    ++marks;
    marker = 100 + slot; // a marker the others must pass back
    return Status::ok();
  }
  Status waitMarker(int64_t marker) override {
    if (marker != 100 && marker != 101)
      return Status::internal("a marker no member made: " +
                              std::to_string(marker));
    ++waits;
    return Status::ok();
  }
  Status handOver(const void *data, int64_t bytes, int64_t &block,
                  int64_t &marker) override {
    handed.push_back(bytes);
    return CpuDevice::handOver(data, bytes, block, marker);
  }
  Status takeOver(int64_t block, int64_t marker, void *data,
                  int64_t bytes) override {
    ++taken;
    return CpuDevice::takeOver(block, marker, data, bytes);
  }
  std::atomic<int> sums{0}, marks{0}, waits{0}, taken{0};
  std::vector<int64_t> handed;
};

std::vector<float> values(whale_rt_tensor *t) {
  const float *p = TestRuntime::data<float>(t);
  return std::vector<float>(p, p + t->tensor.numel());
}

SharedStandIn &standIn(TestRuntime &t) {
  return static_cast<SharedStandIn &>(*t.ctx->device);
}

TEST(SharedDeviceJobs, EachMemberTakesItsShare) {
  float a[20], b[20], c[20];
  const std::vector<float *> buckets{a, b, c};
  std::vector<Device::MemberSum> jobs;
  // A sum of 10 in the host's slices of ceil(10 / 3) = 4: the last member
  // sums 2, over every bucket into every bucket.
  ASSERT_TRUE(
      whale::rt::sharedDeviceJobs(Op::AllReduce, 2, buckets, {10}, jobs));
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].from, (std::vector<const float *>{a + 8, b + 8, c + 8}));
  EXPECT_EQ(jobs[0].to, (std::vector<float *>{a + 8, b + 8, c + 8}));
  EXPECT_EQ(jobs[0].count, 2);
  // A sum too short for every member leaves the last with nothing.
  ASSERT_TRUE(
      whale::rt::sharedDeviceJobs(Op::AllReduce, 2, buckets, {2}, jobs));
  EXPECT_TRUE(jobs.empty());
  // Owners' parts 3, 0, 5: member 0 sums its 3 into its own bucket alone.
  ASSERT_TRUE(whale::rt::sharedDeviceJobs(Op::ReduceToOwners, 0, buckets,
                                          {3, 0, 5}, jobs));
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].from, (std::vector<const float *>{a, b, c}));
  EXPECT_EQ(jobs[0].to, (std::vector<float *>{a}));
  EXPECT_EQ(jobs[0].count, 3);
  // Member 1 owns nothing to sum; it gathers the others' parts.
  ASSERT_TRUE(whale::rt::sharedDeviceJobs(Op::ReduceToOwners, 1, buckets,
                                          {3, 0, 5}, jobs));
  EXPECT_TRUE(jobs.empty());
  ASSERT_TRUE(whale::rt::sharedDeviceJobs(Op::GatherFromOwners, 1, buckets,
                                          {3, 0, 5}, jobs));
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].from, (std::vector<const float *>{a}));
  EXPECT_EQ(jobs[0].to, (std::vector<float *>{b}));
  EXPECT_EQ(jobs[1].from, (std::vector<const float *>{c + 3}));
  EXPECT_EQ(jobs[1].to, (std::vector<float *>{b + 3}));
  EXPECT_EQ(jobs[1].count, 5);
  // An exchange of parts of 2: member 1 takes member k's part 1 into its
  // second half's part k.
  ASSERT_TRUE(
      whale::rt::sharedDeviceJobs(Op::AllToAll, 1, buckets, {2, 2, 2}, jobs));
  ASSERT_EQ(jobs.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(jobs[k].from, (std::vector<const float *>{buckets[k] + 2})) << k;
    EXPECT_EQ(jobs[k].to, (std::vector<float *>{b + 6 + 2 * k})) << k;
  }
}

TEST(SharedDeviceJobs, WhatCannotBeSharedIsRefused) {
  float a[4], b[4];
  std::vector<Device::MemberSum> jobs;
  Status st =
      whale::rt::sharedDeviceJobs(Op::ReduceToOwners, 0, {a, b}, {4}, jobs);
  EXPECT_FALSE(st);
  EXPECT_NE(st.message().find("1 parts for 2 members"), std::string::npos)
      << st.message();
  st = whale::rt::sharedDeviceJobs(Op::AllToAll, 0, {a, b}, {1, 3}, jobs);
  EXPECT_NE(st.message().find("parts of different sizes"), std::string::npos)
      << st.message();
  st = whale::rt::sharedDeviceJobs(
      Op::AllReduce, 0, std::vector<float *>(Device::kMaxSharedMembers + 1, a),
      {4}, jobs);
  EXPECT_NE(st.message().find("at most 16"), std::string::npos) << st.message();
  EXPECT_FALSE(
      whale::rt::sharedDeviceJobs(Op::AllReduce, 2, {a, b}, {4}, jobs));
}

/// `n` members on threads, each with its own stand-in, meeting over an
/// in-process communicator's exchange.
void onMembers(int n,
               const std::function<void(int, InProcessCommunicator &,
                                        const std::vector<int> &)> &body) {
  InProcessCommunicator comm(n, std::chrono::seconds(10));
  std::vector<int> group(n);
  for (int r = 0; r < n; ++r)
    group[r] = r;
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back(body, r, std::ref(comm), std::cref(group));
  for (std::thread &t : threads)
    t.join();
}

Status sharedOn(SharedStandIn &device, InProcessCommunicator &comm,
                const std::vector<int> &group, int rank, Op op, float *data,
                const std::vector<int64_t> &parts) {
  return whale::rt::sharedDeviceBucket(
      device, op, rank, static_cast<int>(group.size()), data, parts,
      [&](const int64_t *mine, int64_t count, int64_t *all) {
        return comm.driverAllGather(rank, group, DType::I64, mine, count, all);
      });
}

TEST(SharedDeviceGroup, ThreeMembersSumAsTheHostCommunicatorDoes) {
  // Values of very different sizes, so another order of the additions
  // would give other bits.
  constexpr int kMembers = 3, kCount = 1001;
  std::vector<float> in[kMembers], shared[kMembers], host[kMembers],
      owned[kMembers], hostOwned[kMembers], gathered[kMembers];
  std::mt19937 random(7);
  std::uniform_real_distribution<float> unit(-1, 1);
  for (int r = 0; r < kMembers; ++r)
    for (int i = 0; i < kCount; ++i)
      in[r].push_back(unit(random) * std::pow(10.f, float((i + r) % 9 - 4)));
  const std::vector<int64_t> parts{400, 1, 600};
  onMembers(kMembers, [&](int r, InProcessCommunicator &comm,
                          const std::vector<int> &group) {
    SharedStandIn device(r);
    shared[r] = host[r] = owned[r] = hostOwned[r] = in[r];
    ASSERT_TRUE(sharedOn(device, comm, group, r, Op::AllReduce,
                         shared[r].data(), {kCount}));
    ASSERT_TRUE(comm.allReduce(r, group, DType::F32, host[r].data(), kCount));
    ASSERT_TRUE(sharedOn(device, comm, group, r, Op::ReduceToOwners,
                         owned[r].data(), parts));
    ASSERT_TRUE(
        comm.reduceToOwners(r, group, DType::F32, hostOwned[r].data(), parts));
    // Each owner's part then handed to every other member.
    gathered[r] = owned[r];
    ASSERT_TRUE(sharedOn(device, comm, group, r, Op::GatherFromOwners,
                         gathered[r].data(), parts));
    // Two rounds, each marked and waited on for every other member.
    EXPECT_EQ(device.marks, 6);
    EXPECT_EQ(device.waits, 12);
  });
  int64_t at = 0;
  for (int r = 0; r < kMembers; ++r) {
    EXPECT_EQ(0, std::memcmp(shared[r].data(), host[r].data(),
                             kCount * sizeof(float)))
        << r;
    EXPECT_EQ(0, std::memcmp(owned[r].data() + at, hostOwned[r].data() + at,
                             parts[r] * sizeof(float)))
        << r;
    EXPECT_EQ(0, std::memcmp(gathered[r].data(), host[0].data(),
                             kCount * sizeof(float)))
        << r;
    at += parts[r];
  }
}

TEST(SharedDeviceGroup, AnExchangeDeliversEachMembersPart) {
  constexpr int kMembers = 3, kPart = 4;
  std::vector<float> bucket[kMembers];
  onMembers(kMembers, [&](int r, InProcessCommunicator &comm,
                          const std::vector<int> &group) {
    SharedStandIn device(r);
    // Member r's part k holds 100 r + 10 k + i; the second half is room.
    bucket[r].assign(2 * kMembers * kPart, -1);
    for (int k = 0; k < kMembers; ++k)
      for (int i = 0; i < kPart; ++i)
        bucket[r][k * kPart + i] = float(100 * r + 10 * k + i);
    ASSERT_TRUE(sharedOn(device, comm, group, r, Op::AllToAll, bucket[r].data(),
                         std::vector<int64_t>(kMembers, kPart)));
  });
  for (int r = 0; r < kMembers; ++r)
    for (int k = 0; k < kMembers; ++k)
      for (int i = 0; i < kPart; ++i)
        EXPECT_EQ(bucket[r][(kMembers + k) * kPart + i],
                  float(100 * k + 10 * r + i))
            << r << " " << k << " " << i;
}

/// Two ranks bound as replicas or stages, each on a stand-in.
struct SharedReplicas : whale::testing::TwoReplicas {
  SharedReplicas()
      : TwoReplicas(1, [](whale_rt_context *ctx, int r) {
          ctx->device = std::make_unique<SharedStandIn>(r);
        }) {}
};
struct SharedStages : whale::testing::TwoStages {
  SharedStages()
      : TwoStages(1, [](whale_rt_context *ctx, int r) {
          ctx->device = std::make_unique<SharedStandIn>(r);
        }) {}
};

TEST(SharedDevice, BucketsOfTwoRanksOnOneDeviceSumInItsMemory) {
  SharedReplicas p;
  std::vector<float> reduced[2][3], gathered[2][3], summed[2], started[2];
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
      reduced[r][i] = values(ts[i]);
    ASSERT_EQ(whale_rt_broadcast_from_owners(t.ctx, WHALE_RT_GROUP_REPLICAS, 0,
                                             3, ts, owners),
              WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    for (int i = 0; i < 3; ++i)
      gathered[r][i] = values(ts[i]);
    whale_rt_tensor *w = t.f32({2}, {1000 * k, 2000 * k});
    ASSERT_EQ(whale_rt_all_reduce(t.ctx, WHALE_RT_GROUP_REPLICAS, 1, &w),
              WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    summed[r] = values(w);
    // A started sum is done where it starts: its markers order it.
    whale_rt_tensor *x = t.f32({3}, {1 * k, 2 * k, 4 * k});
    int64_t request = -1;
    ASSERT_EQ(whale_rt_all_reduce_start(t.ctx, WHALE_RT_GROUP_REPLICAS, 0, 1,
                                        &x, &request),
              WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    EXPECT_EQ(request, 0);
    ASSERT_EQ(whale_rt_all_reduce_wait(t.ctx, request), WHALE_RT_OK);
    started[r] = values(x);
  });
  EXPECT_EQ(reduced[0][1], (std::vector<float>{30, 60, 90, 120}));
  EXPECT_EQ(reduced[1][0], (std::vector<float>{3, 6, 9}));
  EXPECT_EQ(reduced[1][2], (std::vector<float>{300}));
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(gathered[r][0], (std::vector<float>{3, 6, 9})) << r;
    EXPECT_EQ(gathered[r][1], (std::vector<float>{30, 60, 90, 120})) << r;
    EXPECT_EQ(gathered[r][2], (std::vector<float>{300})) << r;
    EXPECT_EQ(summed[r], (std::vector<float>{3000, 6000})) << r;
    EXPECT_EQ(started[r], (std::vector<float>{3, 6, 12})) << r;
    // Four collectives, each a sum (or gather) of this member's share
    // between two markers; the gather's share is one part of the other's.
    SharedStandIn &d = standIn(p.rank[r]);
    EXPECT_EQ(d.marks, 8) << r;
    EXPECT_EQ(d.waits, 8) << r;
    EXPECT_EQ(d.sums, 4) << r;
  }
}

TEST(SharedDevice, ShardGroupSumsGathersAndExchangesStayOnTheDevice) {
  SharedReplicas p;
  std::vector<float> sums[2], joined[2], exchanged[2];
  p.onBoth([&](int r) {
    TestRuntime &t = p.rank[r];
    const float k = float(r + 1);
    whale_rt_tensor *part = t.f32({3}, {1 * k, 2 * k, 3 * k});
    whale_rt_tensor *sum = t.f32({3}, {0, 0, 0});
    ASSERT_EQ(whale_rt_shard_sum(t.ctx, 2, part, sum), WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    sums[r] = values(sum);
    const int64_t weights[] = {3, 1};
    whale_rt_tensor *mine =
        r == 0 ? t.f32({2, 3}, {1, 2, 3, 4, 5, 6}) : t.f32({2, 1}, {7, 8});
    whale_rt_tensor *whole = t.f32({2, 4}, std::vector<float>(8, 0));
    ASSERT_EQ(whale_rt_all_gather(t.ctx, 2, weights, 1, mine, whole),
              WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    joined[r] = values(whole);
    std::vector<float> columns;
    for (int i = 0; i < 4; ++i)
      for (int j = 2 * r; j < 2 * r + 2; ++j)
        columns.push_back(float(4 * i + j));
    whale_rt_tensor *byColumns = t.f32({4, 2}, columns);
    whale_rt_tensor *byRows = t.f32({2, 4}, std::vector<float>(8, 0));
    ASSERT_EQ(whale_rt_all_to_all(t.ctx, 2, nullptr, 0, 1, byColumns, byRows),
              WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    exchanged[r] = values(byRows);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(sums[r], (std::vector<float>{3, 6, 9})) << r;
    EXPECT_EQ(joined[r], (std::vector<float>{1, 2, 3, 7, 4, 5, 6, 8})) << r;
    std::vector<float> rows;
    for (int i = 2 * r; i < 2 * r + 2; ++i)
      for (int j = 0; j < 4; ++j)
        rows.push_back(float(4 * i + j));
    EXPECT_EQ(exchanged[r], rows) << r;
    EXPECT_EQ(standIn(p.rank[r]).marks, 6) << r;
  }
}

TEST(SharedDevice, PipelineSendsAreBlocksHandedOverInAnyOrder) {
  SharedStages p;
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
      // The sent tensor may change at once: its block is a copy.
      TestRuntime::data<float>(b)[0] = -1;
      whale_rt_tensor *reply = t.f32({2}, {0, 0});
      ASSERT_EQ(whale_rt_recv(t.ctx, 1, 11, reply), WHALE_RT_OK)
          << whale_rt_last_error(t.ctx);
      back = values(reply);
      return;
    }
    // Tag 9 first, then tag 7 twice, in the order sent.
    whale_rt_tensor *ids9 = t.make(WHALE_RT_I32, {2});
    ASSERT_EQ(whale_rt_recv(t.ctx, 0, 9, ids9), WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    ids.assign(TestRuntime::data<int32_t>(ids9),
               TestRuntime::data<int32_t>(ids9) + 2);
    whale_rt_tensor *x = t.f32({3}, {0, 0, 0});
    ASSERT_EQ(whale_rt_recv(t.ctx, 0, 7, x), WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    first = values(x);
    ASSERT_EQ(whale_rt_recv(t.ctx, 0, 7, x), WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    again = values(x);
    whale_rt_tensor *reply = t.f32({2}, {42, 43});
    ASSERT_EQ(whale_rt_send(t.ctx, 0, 11, reply), WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
  });
  EXPECT_EQ(ids, (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(first, (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(again, (std::vector<float>{10, 20, 30}));
  EXPECT_EQ(back, (std::vector<float>{42, 43}));
  EXPECT_EQ(standIn(p.rank[0]).handed, (std::vector<int64_t>{12, 8, 12}));
  EXPECT_EQ(standIn(p.rank[1]).handed, (std::vector<int64_t>{8}));
  EXPECT_EQ(standIn(p.rank[0]).taken, 1);
  EXPECT_EQ(standIn(p.rank[1]).taken, 3);
}

TEST(SharedDevice, ARecvOfAnotherSizeIsRefusedAndItsBlockTaken) {
  SharedStages p;
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
  EXPECT_EQ(standIn(p.rank[1]).taken, 1);
}

} // namespace
