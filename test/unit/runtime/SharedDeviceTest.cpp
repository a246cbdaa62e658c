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
//  - through the C ABI on two ranks as threads, the scenarios of
//    TwoRankScenarios.h: ZeRO's buckets and a started all-reduce, a shard
//    group's sums, gathers and exchanges, and a pipeline's sends in any
//    order, all on the shared path (the stand-in counts its calls);
//  - a receive of another size refused with the host's words, its block
//    freed all the same.
//
//===----------------------------------------------------------------------===//

#include "TwoRankScenarios.h"
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

using whale::testing::valuesOf;

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
  // The started sum is done where it starts: its markers order it.
  whale::testing::zeroBucketsScenario(p);
  for (int r = 0; r < 2; ++r) {
    // Three collectives, each this member's share (a sum, or the other's
    // part gathered) between two markers, each waited on by the other.
    SharedStandIn &d = standIn(p.rank[r]);
    EXPECT_EQ(d.marks, 6) << r;
    EXPECT_EQ(d.waits, 6) << r;
    EXPECT_EQ(d.sums, 3) << r;
  }
}

TEST(SharedDevice, ShardGroupSumsGathersAndExchangesStayOnTheDevice) {
  SharedReplicas p;
  whale::testing::shardGroupScenario(p);
  for (int r = 0; r < 2; ++r) // three collectives, two markers each
    EXPECT_EQ(standIn(p.rank[r]).marks, 6) << r;
}

TEST(SharedDevice, PipelineSendsAreBlocksHandedOverInAnyOrder) {
  SharedStages p;
  whale::testing::pipelineScenario(p);
  EXPECT_EQ(standIn(p.rank[0]).handed, (std::vector<int64_t>{12, 8, 12}));
  EXPECT_EQ(standIn(p.rank[1]).handed, (std::vector<int64_t>{8}));
  EXPECT_EQ(standIn(p.rank[0]).taken, 1);
  EXPECT_EQ(standIn(p.rank[1]).taken, 3);
}

TEST(SharedDevice, ARecvOfAnotherSizeIsRefusedAndItsBlockTaken) {
  SharedStages p;
  whale::testing::wrongSizeRecvScenario(p);
  EXPECT_EQ(standIn(p.rank[1]).taken, 1);
}

} // namespace
