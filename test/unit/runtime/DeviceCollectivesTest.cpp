//===- DeviceCollectivesTest.cpp - the C ABI's path to device collectives -===//
//
// A group whose members all have device collectives (NCCL on GPUs) hands
// its buckets to the devices instead of the host communicator. No GPU runs
// here, so two CPU devices stand in: each says it is a physical device of
// its own and runs the bucket operations by reading and writing the other
// member's memory directly (what NCCL does between GPUs). Through the C
// ABI on two ranks as threads: the gradients reduced to their owners, the
// parameters gathered from them, a bucket all-reduced, started or not;
// each went to the devices, packed owner by owner, and the group's set-up
// bytes came from position 0; a shard group's sums and gathers go there
// too. A device that runs started collectives
// beside its compute (a GPU's communication stream) gets them at the
// start and ends them at the wait, and the tensors hold the sums only
// after it.
//
//===----------------------------------------------------------------------===//

#include "TwoRankScenarios.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace {

using whale::rt::Device;
using whale::rt::Status;
using whale::testing::TestRuntime;

/// Where the stand-in devices meet: one round at a time per group.
struct Fabric {
  std::mutex m;
  std::condition_variable cv;
  std::vector<float *> data{nullptr, nullptr};
  int arrived = 0, left = 0;
  bool done = false;
  /// What each round did, and the parts it was given.
  std::vector<Device::BucketOp> ops;
  std::vector<std::vector<int64_t>> parts;
  /// The set-up bytes each position got from position 0.
  std::vector<int32_t> shared{-1, -1};

  /// The last member to arrive runs `op` on every member's memory.
  void run(Device::BucketOp op, int position, float *mine,
           const std::vector<int64_t> &layout) {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return !done; }); // the round before has emptied
    data[position] = mine;
    if (++arrived == 2) {
      ops.push_back(op);
      parts.push_back(layout);
      if (op == Device::BucketOp::AllToAll)
        exchange(layout);
      else
        combine(op, layout);
      done = true;
      cv.notify_all();
    } else {
      cv.wait(lock, [&] { return done; });
    }
    if (++left == 2) {
      arrived = left = 0;
      done = false;
      cv.notify_all();
    }
  }

  /// Sums, reduces to owners or gathers from owners, part by part.
  void combine(Device::BucketOp op, const std::vector<int64_t> &layout) {
    int64_t at = 0;
    for (size_t k = 0; k < layout.size(); at += layout[k++])
      for (int64_t i = at; i < at + layout[k]; ++i) {
        const float sum = data[0][i] + data[1][i];
        if (op == Device::BucketOp::AllReduce)
          data[0][i] = data[1][i] = sum;
        else if (op == Device::BucketOp::ReduceToOwners)
          data[k][i] = sum;
        else
          data[1 - k][i] = data[k][i];
      }
  }
  /// A pipeline's messages between the devices by pair, in the order sent;
  /// the bytes of each as sent, and each side's set-up bytes by pair.
  std::map<std::string, std::deque<std::vector<char>>> queued;
  std::map<std::string, std::vector<int64_t>> carried;
  std::map<std::string, std::vector<int32_t>> pairSetUp;

  void post(const std::string &key, const void *data, int64_t bytes) {
    std::lock_guard<std::mutex> lock(m);
    const char *c = static_cast<const char *>(data);
    queued[key].emplace_back(c, c + bytes);
    carried[key].push_back(bytes);
    cv.notify_all();
  }
  /// The pair's next message, waited for, into `data`.
  Status take(const std::string &key, void *data, int64_t bytes) {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return !queued[key].empty(); });
    std::vector<char> message = std::move(queued[key].front());
    queued[key].pop_front();
    if (static_cast<int64_t>(message.size()) != bytes)
      return Status::internal("the pair's next message has " +
                              std::to_string(message.size()) + " bytes, not " +
                              std::to_string(bytes));
    std::copy(message.begin(), message.end(), static_cast<char *>(data));
    return Status::ok();
  }

  /// Member m's received part k is member k's sent part m.
  void exchange(const std::vector<int64_t> &layout) {
    const int64_t total = layout[0] + layout[1];
    for (int m = 0; m < 2; ++m)
      for (int k = 0; k < 2; ++k)
        for (int64_t i = 0; i < layout[m]; ++i)
          data[m][total + (k == 0 ? 0 : layout[0]) + i] =
              data[k][(m == 0 ? 0 : layout[0]) + i];
  }
};

/// A CPU device that claims device collectives of its own.
class LoopbackDevice : public whale::rt::CpuDevice {
public:
  LoopbackDevice(int id, Fabric &fabric)
      : CpuDevice("loopback:" + std::to_string(id), {}), id(id),
        fabric(fabric) {}
  int collectiveDevice() const override { return id; }
  Status bucketCollective(BucketOp op, const std::string &key, int position,
                          int size, float *data,
                          const std::vector<int64_t> &parts,
                          const ShareFromFirst &share) override {
    if (size != 2)
      return Status::invalid("the fabric joins two devices");
    if (!joined) {
      int32_t bytes[2] = {position == 0 ? 4242 : 0, 0};
      if (Status st = share(reinterpret_cast<char *>(bytes), sizeof bytes);
          !st)
        return st;
      fabric.shared[position] = bytes[0];
      joined = true;
    }
    fabric.run(op, position, data, parts);
    return Status::ok();
  }
  /// A pipeline's messages go through the fabric's queues; each side's
  /// first call of a pair takes the set-up bytes from the sender.
  Status pairSend(const std::string &key, const void *data, int64_t bytes,
                  const ShareFromFirst &share) override {
    if (Status st = joinPair(key, 0, share); !st)
      return st;
    fabric.post(key, data, bytes);
    return Status::ok();
  }
  Status pairRecv(const std::string &key, void *data, int64_t bytes,
                  const ShareFromFirst &share) override {
    if (Status st = joinPair(key, 1, share); !st)
      return st;
    return fabric.take(key, data, bytes);
  }
  /// With `deferring`, a started collective runs at its wait.
  Status bucketCollectiveStart(BucketOp op, const std::string &key,
                               int position, int size, float *data,
                               const std::vector<int64_t> &parts,
                               const ShareFromFirst &share,
                               int64_t &ticket) override {
    if (!deferring)
      return CpuDevice::bucketCollectiveStart(op, key, position, size, data,
                                              parts, share, ticket);
    ticket = static_cast<int64_t>(pending.size()) + 1;
    pending.push_back([this, op, key, position, size, data, parts, share] {
      return bucketCollective(op, key, position, size, data, parts, share);
    });
    return Status::ok();
  }
  Status bucketCollectiveWait(int64_t ticket) override {
    if (ticket == 0)
      return Status::ok();
    return pending.at(static_cast<size_t>(ticket - 1))();
  }
  bool deferring = false;

private:
  Status joinPair(const std::string &key, int position,
                  const ShareFromFirst &share) {
    if (pairsJoined.count(key))
      return Status::ok();
    int32_t bytes[4] = {position == 0 ? 4343 : 0, 0, 0, 0};
    if (Status st = share(reinterpret_cast<char *>(bytes), sizeof bytes); !st)
      return st;
    std::lock_guard<std::mutex> lock(fabric.m);
    fabric.pairSetUp[key].push_back(bytes[0]);
    pairsJoined.insert(key);
    return Status::ok();
  }
  std::set<std::string> pairsJoined;
  std::vector<std::function<Status()>> pending;
  int id;
  Fabric &fabric;
  bool joined = false;
};

/// The fabric, made before the ranks whose devices it joins.
struct HasFabric {
  Fabric fabric;
};

/// Two ranks bound as replicas, each on a loopback device.
struct LoopbackReplicas : HasFabric, whale::testing::TwoReplicas {
  LoopbackReplicas()
      : TwoReplicas(1, [this](whale_rt_context *ctx, int r) {
          ctx->device = std::make_unique<LoopbackDevice>(r, fabric);
        }) {}
};

/// Two pipeline stages, each on a loopback device.
struct LoopbackStages : HasFabric, whale::testing::TwoStages {
  LoopbackStages()
      : TwoStages(1, [this](whale_rt_context *ctx, int r) {
          ctx->device = std::make_unique<LoopbackDevice>(r, fabric);
        }) {}
};

using whale::testing::valuesOf;

TEST(DeviceCollectives, ZeroBucketsGoToTheDevicesPackedOwnerByOwner) {
  LoopbackReplicas p;
  // A started all-reduce on devices runs where it starts.
  whale::testing::zeroBucketsScenario(p);
  using Op = Device::BucketOp;
  EXPECT_EQ(p.fabric.ops, (std::vector<Op>{Op::ReduceToOwners,
                                           Op::GatherFromOwners,
                                           Op::AllReduce}));
  // Position 0 owns the 4 elements of the second tensor, position 1 the
  // first and third (3 + 1): packed in that order.
  ASSERT_EQ(p.fabric.parts.size(), 3u);
  EXPECT_EQ(p.fabric.parts[0], (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(p.fabric.parts[1], (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(p.fabric.parts[2], (std::vector<int64_t>{2}));
  EXPECT_EQ(p.fabric.shared, (std::vector<int32_t>{4242, 4242}));
}

TEST(DeviceCollectives, StartedBucketsEndOnTheDevicesAtTheirWaits) {
  LoopbackReplicas p;
  std::vector<float> before[2], after[2], owned[2];
  p.onBoth([&](int r) {
    TestRuntime &t = p.rank[r];
    static_cast<LoopbackDevice &>(*t.ctx->device).deferring = true;
    const float k = float(r + 1);
    whale_rt_tensor *x = t.f32({2}, {1 * k, 2 * k});
    whale_rt_tensor *g[] = {t.f32({1}, {10 * k}), t.f32({2}, {20 * k, 30 * k})};
    const int32_t owners[] = {1, 0};
    int64_t summed = 0, reduced = 0;
    ASSERT_EQ(whale_rt_all_reduce_start(t.ctx, WHALE_RT_GROUP_REPLICAS, 0, 1,
                                        &x, &summed),
              WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    ASSERT_EQ(whale_rt_reduce_to_owners_start(t.ctx, WHALE_RT_GROUP_REPLICAS,
                                              0, 2, g, owners, &reduced),
              WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    EXPECT_LT(summed, 0); // the device's tickets
    EXPECT_LT(reduced, 0);
    before[r] = valuesOf(x);
    ASSERT_EQ(whale_rt_all_reduce_wait(t.ctx, summed), WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    ASSERT_EQ(whale_rt_all_reduce_wait(t.ctx, reduced), WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    after[r] = valuesOf(x);
    owned[r] = valuesOf(g[r == 1 ? 0 : 1]);
    // Waited for once, a request is gone.
    EXPECT_EQ(whale_rt_all_reduce_wait(t.ctx, summed),
              WHALE_RT_INVALID_ARGUMENT);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(before[r], (std::vector<float>{r + 1.f, 2 * (r + 1.f)})) << r;
    EXPECT_EQ(after[r], (std::vector<float>{3, 6})) << r;
  }
  EXPECT_EQ(owned[1], (std::vector<float>{30}));
  EXPECT_EQ(owned[0], (std::vector<float>{60, 90}));
  using Op = Device::BucketOp;
  EXPECT_EQ(p.fabric.ops, (std::vector<Op>{Op::AllReduce, Op::ReduceToOwners}));
  // Position 0 owns the second gradient (2 elements), 1 the first.
  EXPECT_EQ(p.fabric.parts[1], (std::vector<int64_t>{2, 1}));
}

TEST(DeviceCollectives, ShardGroupSumsGathersAndExchangesStayOnTheDevices) {
  LoopbackReplicas p;
  whale::testing::shardGroupScenario(p);
  using Op = Device::BucketOp;
  EXPECT_EQ(p.fabric.ops, (std::vector<Op>{Op::AllReduce, Op::GatherFromOwners,
                                           Op::AllToAll}));
  ASSERT_EQ(p.fabric.parts.size(), 3u);
  EXPECT_EQ(p.fabric.parts[0], (std::vector<int64_t>{3}));
  EXPECT_EQ(p.fabric.parts[1], (std::vector<int64_t>{6, 6}));
  EXPECT_EQ(p.fabric.parts[2], (std::vector<int64_t>{4, 4}));
}

TEST(DeviceCollectives, PipelineSendsGoDeviceToDeviceInAnyOrder) {
  LoopbackStages p;
  whale::testing::pipelineScenario(p);
  // Every payload went device to device, each direction its own pair, in
  // the order sent; each receiver got the set-up bytes from its sender.
  EXPECT_EQ(p.fabric.carried["pair:0>1"], (std::vector<int64_t>{12, 8, 12}));
  EXPECT_EQ(p.fabric.carried["pair:1>0"], (std::vector<int64_t>{8}));
  EXPECT_EQ(p.fabric.pairSetUp["pair:0>1"], (std::vector<int32_t>{4343, 4343}));
  EXPECT_EQ(p.fabric.pairSetUp["pair:1>0"], (std::vector<int32_t>{4343, 4343}));
  EXPECT_TRUE(p.fabric.ops.empty()); // and no collective ran
}

TEST(DeviceCollectives, ADeviceRecvOfAnotherSizeIsRefused) {
  LoopbackStages p;
  whale::testing::wrongSizeRecvScenario(p);
}

} // namespace
