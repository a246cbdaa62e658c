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

#include "../RuntimeFixture.h"
#include "runtime/capi/CApiInternal.h"

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

std::vector<float> values(whale_rt_tensor *t) {
  const float *p = TestRuntime::data<float>(t);
  return std::vector<float>(p, p + t->tensor.numel());
}

TEST(DeviceCollectives, ZeroBucketsGoToTheDevicesPackedOwnerByOwner) {
  LoopbackReplicas p;
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
      reduced[r][i] = values(ts[i]);
    // Each owner's tensors now differ from the other's copy: the gather
    // hands each owner's on.
    ASSERT_EQ(whale_rt_broadcast_from_owners(t.ctx, WHALE_RT_GROUP_REPLICAS, 0,
                                             3, ts, owners),
              WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    for (int i = 0; i < 3; ++i)
      gathered[r][i] = values(ts[i]);
    // A started all-reduce on devices runs where it starts.
    whale_rt_tensor *w = t.f32({2}, {1000 * k, 2000 * k});
    int64_t request = -1;
    ASSERT_EQ(whale_rt_all_reduce_start(t.ctx, WHALE_RT_GROUP_REPLICAS, 0, 1,
                                        &w, &request),
              WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    ASSERT_EQ(whale_rt_all_reduce_wait(t.ctx, request), WHALE_RT_OK);
    summed[r] = values(w);
  });
  // Owners: the second tensor on position 0, the first and third on 1.
  EXPECT_EQ(reduced[0][1], (std::vector<float>{30, 60, 90, 120}));
  EXPECT_EQ(reduced[1][0], (std::vector<float>{3, 6, 9}));
  EXPECT_EQ(reduced[1][2], (std::vector<float>{300}));
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(gathered[r][0], (std::vector<float>{3, 6, 9})) << r;
    EXPECT_EQ(gathered[r][1], (std::vector<float>{30, 60, 90, 120})) << r;
    EXPECT_EQ(gathered[r][2], (std::vector<float>{300})) << r;
    EXPECT_EQ(summed[r], (std::vector<float>{3000, 6000})) << r;
  }
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
    before[r] = values(x);
    ASSERT_EQ(whale_rt_all_reduce_wait(t.ctx, summed), WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    ASSERT_EQ(whale_rt_all_reduce_wait(t.ctx, reduced), WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    after[r] = values(x);
    owned[r] = values(g[r == 1 ? 0 : 1]);
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
  std::vector<float> sums[2], joined[2], exchanged[2];
  p.onBoth([&](int r) {
    TestRuntime &t = p.rank[r];
    const float k = float(r + 1);
    // A row-parallel product's partial sums, added over the shard group.
    whale_rt_tensor *part = t.f32({3}, {1 * k, 2 * k, 3 * k});
    whale_rt_tensor *sum = t.f32({3}, {0, 0, 0});
    ASSERT_EQ(whale_rt_shard_sum(t.ctx, 2, part, sum), WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    sums[r] = values(sum);
    // Uneven parts (3 : 1 of 4 columns), gathered along the columns: each
    // travels in a slot of the larger part's size.
    const int64_t weights[] = {3, 1};
    whale_rt_tensor *mine = r == 0 ? t.f32({2, 3}, {1, 2, 3, 4, 5, 6})
                                   : t.f32({2, 1}, {7, 8});
    whale_rt_tensor *whole = t.f32({2, 4}, std::vector<float>(8, 0));
    ASSERT_EQ(whale_rt_all_gather(t.ctx, 2, weights, 1, mine, whole),
              WHALE_RT_OK)
        << whale_rt_last_error(t.ctx);
    joined[r] = values(whole);
    // X[i][j] = 4i + j, held by columns (two each), then by rows.
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
  }
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
  std::vector<float> first, again, back;
  std::vector<int32_t> ids;
  p.onBoth([&](int r) {
    TestRuntime &t = p.rank[r];
    if (r == 0) {
      // Tag 7 twice, with tag 9 between; then a reply from stage 1.
      whale_rt_tensor *a = t.f32({3}, {1, 2, 3});
      whale_rt_tensor *ids9 = t.make(WHALE_RT_I32, {2});
      TestRuntime::data<int32_t>(ids9)[0] = 4;
      TestRuntime::data<int32_t>(ids9)[1] = 5;
      whale_rt_tensor *b = t.f32({3}, {10, 20, 30});
      for (whale_rt_tensor *x : {a, ids9, b})
        ASSERT_EQ(whale_rt_send(t.ctx, 1, x == ids9 ? 9 : 7, x), WHALE_RT_OK)
            << whale_rt_last_error(t.ctx);
      // The sent tensor may change at once: the device sent its bytes.
      TestRuntime::data<float>(b)[0] = -1;
      whale_rt_tensor *reply = t.f32({2}, {0, 0});
      ASSERT_EQ(whale_rt_recv(t.ctx, 1, 11, reply), WHALE_RT_OK)
          << whale_rt_last_error(t.ctx);
      back = values(reply);
      return;
    }
    // Tag 9 first: tag 7's first message arrives before it and waits.
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

} // namespace
