//===- SimulatorTest.cpp - the performance model against closed forms -----===//
//
// The collective models against their formulas, the GEMM efficiency curve,
// and the replay on hand-built programs whose timelines are known: a GPipe
// pipeline of equal stages idles (p - 1) / (m + p - 1) of its time, and
// interleaved over v chunks a stage (p - 1) / (v m + p - 1), replicas
// alike are replayed once, a recv without a send is reported.
//
//===----------------------------------------------------------------------===//

#include "sim/Simulator.h"
#include "lowering/Transforms/Parallel/PipelineOrder.h"
#include "sim/ProfileDb.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace whale::perf;
using namespace whale::sim;

namespace {

TEST(Collectives, RingAllReduceIsTheClosedForm) {
  Link link{1e9, 5e-6};
  for (int64_t n : {2, 4, 8, 64}) {
    double bytes = 64e6;
    double want = 2.0 * (n - 1) / n * bytes / link.bandwidth +
                  2.0 * (n - 1) * link.latency;
    EXPECT_NEAR(collectiveSeconds(Collective::AllReduce, Algorithm::Ring, bytes,
                                  n, link),
                want, want * 1e-12)
        << n << " ranks";
  }
}

TEST(Collectives, TreeAllReduceAndTheOthers) {
  Link link{2e9, 1e-5};
  double b = 8e6;
  EXPECT_NEAR(
      collectiveSeconds(Collective::AllReduce, Algorithm::Tree, b, 8, link),
      2 * 3 * 1e-5 + 2 * b / 2e9, 1e-15);
  EXPECT_NEAR(
      collectiveSeconds(Collective::AllGather, Algorithm::Ring, b, 4, link),
      3 * (1e-5 + b / 4 / 2e9), 1e-15);
  EXPECT_NEAR(
      collectiveSeconds(Collective::ReduceScatter, Algorithm::Ring, b, 4, link),
      3 * (1e-5 + b / 4 / 2e9), 1e-15);
  EXPECT_NEAR(
      collectiveSeconds(Collective::AllToAll, Algorithm::Ring, b, 4, link),
      3 * (1e-5 + b / 4 / 2e9), 1e-15);
  EXPECT_NEAR(
      collectiveSeconds(Collective::SendRecv, Algorithm::Ring, b, 2, link),
      1e-5 + b / 2e9, 1e-15);
  // One rank has nobody to talk to.
  EXPECT_EQ(
      collectiveSeconds(Collective::AllReduce, Algorithm::Ring, b, 1, link), 0);
}

TEST(Collectives, TreeWinsSmallMessagesOverManyRanksRingLargeOnes) {
  Link link{1e10, 2e-5};
  EXPECT_EQ(bestAlgorithm(Collective::AllReduce, 1024, 256, link),
            Algorithm::Tree);
  EXPECT_EQ(bestAlgorithm(Collective::AllReduce, 1e9, 8, link),
            Algorithm::Ring);
}

TEST(DeviceModel, KnownGpusAndGemmEfficiency) {
  const DeviceModel *a100 = findGpuModel("a100-40gb");
  ASSERT_NE(a100, nullptr);
  EXPECT_DOUBLE_EQ(a100->matmulFlopsBf16, 312e12);
  EXPECT_EQ(findGpuModel("H100")->name, "H100-SXM");
  EXPECT_EQ(findGpuModel("B9000"), nullptr);
  // A product of whole waves of full tiles with a deep K is near peak; a
  // thin one is not.
  OpCost big{2.0 * 8192 * 8192 * 8192, 0, true, true, 1, 8192, 8192, 8192};
  OpCost thin{2.0 * 8 * 8192 * 8192, 0, true, true, 1, 8, 8192, 8192};
  EXPECT_GT(gemmEfficiency(big, *a100), 0.9);
  EXPECT_LT(gemmEfficiency(thin, *a100), 0.1);
  // Roofline: an elementwise op over 1 GB is bound by memory.
  OpCost copy{1e9 / 4, 1e9};
  EXPECT_NEAR(opSeconds(copy, *a100), a100->launchSeconds + 1e9 / 1555e9,
              1e-12);
}

// A CPU GEMM loses to its BLAS's copies of the operands what the copies
// cost in multiply-adds (8 bytes an element at the memory bandwidth, 2
// flops a multiply-add): a product 96 rows deep in one dimension pays the
// same whichever dimension it is (the forward's rows, a weight
// gradient's depth), where a GPU's tiles priced a 96-deep one below a
// 96-row one. One thread at 100 GFLOP/s and 25 GB/s: 16 rows a copy.
TEST(DeviceModel, ACpuGemmLosesItsOperandCopies) {
  const DeviceModel cpu = cpuModel(100e9, 1, 0);
  DeviceModel withBandwidth = cpu;
  withBandwidth.memoryBandwidth = 25e9;
  const double flops = 2.0 * 96 * 1024 * 1024;
  OpCost rows{flops, 0, true, false, 1, 96, 1024, 1024};
  OpCost depth{flops, 0, true, false, 1, 1024, 1024, 96};
  OpCost cube{2.0 * 1024 * 1024 * 1024, 0, true, false, 1, 1024, 1024, 1024};
  const double packRows = 4 * 100e9 / 25e9;
  EXPECT_DOUBLE_EQ(gemmEfficiency(rows, withBandwidth),
                   1 / (1 + packRows * (1 / 96.0 + 2 / 1024.0)));
  EXPECT_DOUBLE_EQ(gemmEfficiency(depth, withBandwidth),
                   gemmEfficiency(rows, withBandwidth));
  EXPECT_DOUBLE_EQ(gemmEfficiency(cube, withBandwidth),
                   1 / (1 + packRows * 3 / 1024.0));
  // A direct kernel (a convolution through oneDNN) makes no copies: its
  // 64-wide tiles' edges (96 rows fill 0.75 of two) and their loads
  // beside the depth take their part instead.
  OpCost direct = rows;
  direct.direct = true;
  EXPECT_DOUBLE_EQ(gemmEfficiency(direct, withBandwidth),
                   0.75 * 1024.0 / (1024.0 + 64.0));
  // A slower memory makes the copies dearer.
  EXPECT_LT(gemmEfficiency(rows, cpu), gemmEfficiency(rows, withBandwidth));
  // Threads still fill in whole waves of tiles: one 64-row tile over two
  // threads leaves one idle.
  DeviceModel two = cpuModel(200e9, 2, 0);
  OpCost narrow{2.0 * 64 * 64 * 1024, 0, true, false, 1, 64, 64, 1024};
  EXPECT_NEAR(
      gemmEfficiency(narrow, two),
      0.5 / (1 + 4 * 200e9 / two.memoryBandwidth * (2 / 64.0 + 1 / 1024.0)),
      1e-12);
}

/// Builds programs by hand: compute events of given seconds on a device
/// whose vector rate is 1 FLOP/s (so an event of f FLOPs takes f seconds).
struct Builder {
  EventTable table;
  uint32_t compute(const std::string &name, double seconds) {
    Event e;
    e.op = name;
    e.signature = std::to_string(seconds);
    e.cost.flops = seconds;
    return table.intern(e);
  }
  uint32_t message(bool send, double bytes) {
    Event e;
    e.op = send ? "send" : "recv";
    e.signature = std::to_string(bytes);
    e.kind = send ? StepKind::Send : StepKind::Recv;
    e.collective = Collective::SendRecv;
    e.commBytes = bytes;
    return table.intern(e);
  }
  uint32_t allReduce(double bytes) {
    Event e;
    e.op = "all_reduce";
    e.signature = std::to_string(bytes);
    e.kind = StepKind::Collective;
    e.commBytes = bytes;
    return table.intern(e);
  }
  uint32_t wait() {
    Event e;
    e.op = "all_reduce_wait";
    e.kind = StepKind::Wait;
    return table.intern(e);
  }
};

/// A collective step: the `sequence`-th over its group, started (request
/// >= 0) or waited in.
Step collectiveStep(uint32_t event, uint32_t sequence, int32_t request = -1) {
  Step s{event};
  s.sequence = sequence;
  s.request = request;
  return s;
}
Step waitStep(uint32_t event, int32_t request) {
  Step s{event};
  s.request = request;
  return s;
}

Topology unitDevices(int64_t n) {
  Topology t;
  DeviceModel d;
  d.name = "unit";
  d.vectorFlops = 1;
  for (int64_t i = 0; i < n; ++i) {
    t.devices.push_back(d);
    t.node.push_back(0);
  }
  return t;
}

/// p equal stages in the planner's own order
/// (lowering/Transforms/Parallel/PipelineOrder.h) of `kind` over v chunks a
/// stage: a chunk's forward takes 1 / v s and its backward 2 / v s; messages
/// are free. A micro-batch passes chunk 0 of every stage, then chunk 1 of every
/// stage, and so on.
ProgramSet pipeline(Builder &b, const char *kind, int64_t p, int64_t m,
                    int64_t v) {
  ProgramSet set;
  uint32_t f = b.compute("forward", 1.0 / double(v)),
           bw = b.compute("backward", 2.0 / double(v));
  uint32_t send = b.message(true, 0), recv = b.message(false, 0);
  const int64_t last = p * v - 1; // the last place in the pipeline
  for (int64_t s = 0; s < p; ++s) {
    StageProgram prog;
    prog.stage = s;
    prog.name = "stage" + std::to_string(s);
    auto add = [&](uint32_t e, int64_t place = -1, int64_t tag = 0) {
      Step st;
      st.event = e;
      st.peer = place < 0 ? -1 : int32_t(place % p);
      st.tag = tag;
      prog.steps.push_back(st);
    };
    for (const whale::ScheduleStep &step :
         whale::plan::pipelineOrder(kind, s, p, m, v)) {
      const int64_t place = step.chunk * p + s;
      // What crosses from place x to x + 1: tagged by x, micro-batch and
      // direction.
      auto tag = [&](int64_t from) {
        return (from * m + step.microBatch) * 2 + (step.backward ? 1 : 0);
      };
      if (!step.backward) {
        if (place > 0)
          add(recv, place - 1, tag(place - 1));
        add(f);
        if (place < last)
          add(send, place + 1, tag(place));
      } else {
        if (place < last)
          add(recv, place + 1, tag(place));
        add(bw);
        if (place > 0)
          add(send, place - 1, tag(place - 1));
      }
    }
    set.stages.push_back(prog);
  }
  return set;
}

TEST(Replay, GPipeBubbleOfEqualStages) {
  for (auto [p, m] : {std::pair<int64_t, int64_t>{4, 8}, {2, 4}, {8, 16}}) {
    Builder b;
    ProgramSet set = pipeline(b, "gpipe", p, m, 1);
    PlanShape plan;
    plan.stages = p;
    plan.replicas = 1;
    for (int64_t s = 0; s < p; ++s)
      plan.grid.push_back(s);
    plan.programs = {&set};
    SimResult r;
    std::string error;
    ASSERT_TRUE(simulate(b.table, plan, unitDevices(p), {}, r, error)) << error;
    // (m + p - 1) forward slots of 1 s and as many backward ones of 2 s.
    EXPECT_NEAR(r.iterationSeconds, 3.0 * (m + p - 1), 1e-9);
    EXPECT_NEAR(r.bubbleFraction, double(p - 1) / (m + p - 1), 1e-9)
        << p << " stages, " << m << " micro-batches";
  }
}

TEST(Replay, InterleavedBubbleOfEqualStages) {
  struct Case {
    const char *kind;
    int64_t p, m, v;
  };
  for (Case c :
       {Case{"1f1b", 4, 8, 2}, Case{"1f1b", 2, 4, 3}, Case{"1f1b", 8, 16, 4},
        Case{"1f1b", 4, 8, 1}, Case{"gpipe", 4, 8, 2}}) {
    Builder b;
    ProgramSet set = pipeline(b, c.kind, c.p, c.m, c.v);
    PlanShape plan;
    plan.stages = c.p;
    plan.replicas = 1;
    for (int64_t s = 0; s < c.p; ++s)
      plan.grid.push_back(s);
    plan.programs = {&set};
    SimResult r;
    std::string error;
    ASSERT_TRUE(simulate(b.table, plan, unitDevices(c.p), {}, r, error))
        << error;
    // m micro-batches of 3 s of work, and p - 1 slots of a chunk's 3 / v s.
    const double work = 3.0 * double(c.m);
    EXPECT_NEAR(r.iterationSeconds, work + 3.0 * double(c.p - 1) / double(c.v),
                1e-9)
        << c.kind << ", " << c.p << " stages, " << c.m << " micro-batches, "
        << c.v << " chunks";
    EXPECT_NEAR(r.bubbleFraction, double(c.p - 1) / double(c.v * c.m + c.p - 1),
                1e-9)
        << c.kind << ", " << c.p << " stages, " << c.m << " micro-batches, "
        << c.v << " chunks";
  }
}

TEST(Replay, ReplicasAlikeAreReplayedOnceAndWaitForTheSlowest) {
  Builder b;
  uint32_t work = b.compute("work", 3), ar = b.allReduce(4e6);
  ProgramSet set;
  StageProgram prog;
  prog.name = "stage0";
  prog.steps = {Step{work}, Step{ar}};
  set.stages.push_back(prog);
  PlanShape plan;
  plan.stages = 1;
  plan.replicas = 64;
  for (int64_t r = 0; r < 64; ++r) {
    plan.grid.push_back(r);
    plan.programs.push_back(&set);
  }
  Topology t = unitDevices(64);
  t.intraNode = {1e9, 1e-6};
  // Device 5 is half as fast: its class waits for nobody, the others wait
  // for it at the all-reduce.
  t.devices[5].vectorFlops = 0.5;
  t.devices[5].name = "slow";
  SimResult r;
  std::string error;
  ASSERT_TRUE(simulate(b.table, plan, t, {}, r, error)) << error;
  ASSERT_EQ(r.ranks.size(), 2u);
  EXPECT_EQ(r.ranks[0].likeIt + r.ranks[1].likeIt, 64);
  double ring = collectiveSeconds(Collective::AllReduce, Algorithm::Ring, 4e6,
                                  64, t.intraNode),
         tree = collectiveSeconds(Collective::AllReduce, Algorithm::Tree, 4e6,
                                  64, t.intraNode);
  EXPECT_NEAR(r.iterationSeconds, 6 + std::min(ring, tree), 1e-9);
  EXPECT_NEAR(r.ranks[0].idleSeconds, 3, 1e-9);
  // Each rank's collective time is the transfer alone, not the wait for
  // the slow one (which the search's bound must not count).
  for (const SimRank &rank : r.ranks)
    EXPECT_NEAR(rank.collectiveSeconds, std::min(ring, tree), 1e-9);
  EXPECT_EQ(r.replayedSteps, 4);
}

/// Two replicas alike running `prog`; every all-reduce takes 2 s.
SimResult replayTwoReplicas(Builder &b, StageProgram prog,
                            SimOptions options = {}) {
  ProgramSet set;
  set.stages.push_back(std::move(prog));
  PlanShape plan;
  plan.stages = 1;
  plan.replicas = 2;
  plan.grid = {0, 1};
  plan.programs = {&set, &set};
  options.measuredCollective = [](const Event &, int64_t, const DeviceModel &) {
    return std::optional<double>(2.0);
  };
  SimResult r;
  std::string error;
  EXPECT_TRUE(simulate(b.table, plan, unitDevices(2), options, r, error))
      << error;
  return r;
}

TEST(Replay, StartedAllReducesRunAsideInOrderAndOnlyTheirTailIsExposed) {
  Builder b;
  uint32_t work = b.compute("work", 1), ar = b.allReduce(8), wait = b.wait();
  // work; start #0; work; start #1; work; wait #0; wait #1. The first sum
  // runs from 1 s to 3 s beside the work; the second waits for the
  // collective thread until 3 s and ends at 5 s, 2 s after the work.
  StageProgram started;
  started.steps = {Step{work},
                   collectiveStep(ar, 0, 0),
                   Step{work},
                   collectiveStep(ar, 1, 1),
                   Step{work},
                   waitStep(wait, 0),
                   waitStep(wait, 1)};
  SimOptions traced;
  traced.trace = true;
  SimResult r = replayTwoReplicas(b, started, traced);
  EXPECT_NEAR(r.iterationSeconds, 5, 1e-9);
  ASSERT_EQ(r.ranks.size(), 1u);
  EXPECT_NEAR(r.ranks[0].computeSeconds, 3, 1e-9);
  // Only the exposed tail counts as the rank's communication.
  EXPECT_NEAR(r.ranks[0].commSeconds, 2, 1e-9);
  EXPECT_NEAR(r.ranks[0].idleSeconds, 0, 1e-9);
  // The sums on the communication track at [1, 3] and [3, 5]; the wait on
  // the compute track at [3, 5].
  std::vector<std::tuple<double, double, bool, bool>> got;
  for (const Interval &iv : r.intervals)
    if (iv.comm)
      got.emplace_back(iv.start, iv.duration, iv.waiting, iv.event == wait);
  EXPECT_EQ(got, (std::vector<std::tuple<double, double, bool, bool>>{
                     {1, 2, false, false},
                     {3, 2, false, false},
                     {3, 2, true, true}}));

  // The same collectives waited in where they are started: 7 s.
  StageProgram blocking;
  blocking.steps = {Step{work}, collectiveStep(ar, 0), Step{work},
                    collectiveStep(ar, 1), Step{work}};
  EXPECT_NEAR(replayTwoReplicas(b, blocking).iterationSeconds, 7, 1e-9);
}

TEST(Replay, ABlockingCollectiveOverTheGroupComesAfterTheStartedOnes) {
  // The runtime pairs a group's collectives by order: the blocking one
  // starts once the started one has ended (2 s), and ends at 4 s.
  Builder b;
  uint32_t ar = b.allReduce(8), wait = b.wait();
  StageProgram prog;
  prog.steps = {collectiveStep(ar, 0, 0), collectiveStep(ar, 1),
                waitStep(wait, 0)};
  SimResult r = replayTwoReplicas(b, prog);
  EXPECT_NEAR(r.iterationSeconds, 4, 1e-9);
}

TEST(Replay, ARecvWithoutItsSendIsADeadlock) {
  Builder b;
  ProgramSet set;
  StageProgram prog;
  prog.name = "m_stage0";
  Step recv{b.message(false, 8)};
  recv.peer = 0;
  recv.tag = 7;
  prog.steps = {recv};
  set.stages.push_back(prog);
  PlanShape plan;
  plan.grid = {0};
  plan.programs = {&set};
  SimResult r;
  std::string error;
  EXPECT_FALSE(simulate(b.table, plan, unitDevices(1), {}, r, error));
  EXPECT_NE(error.find("deadlocks"), std::string::npos) << error;
  EXPECT_NE(error.find("m_stage0"), std::string::npos) << error;
}

TEST(Replay, ATagSentTwiceIsReceivedInOrder) {
  // Stage 0 sends tag 7 at 1 s and again at 3 s; stage 1 receives both,
  // working 1 s after each. Each receive takes its own message: the first
  // is in at 1 s, the second at 3 s, so stage 1 ends at 4 s (not at 2 s
  // or 5 s, as when both receives met one message).
  Builder b;
  uint32_t work = b.compute("work", 1), longer = b.compute("longer", 2);
  uint32_t send = b.message(true, 0), recv = b.message(false, 0);
  Step to{send}, from{recv};
  to.peer = 1;
  to.tag = 7;
  from.peer = 0;
  from.tag = 7;
  ProgramSet set;
  StageProgram first, second;
  first.name = "m_stage0";
  first.steps = {Step{work}, to, Step{longer}, to};
  second.name = "m_stage1";
  second.stage = 1;
  second.steps = {from, Step{work}, from, Step{work}};
  set.stages = {first, second};
  PlanShape plan;
  plan.stages = 2;
  plan.grid = {0, 1};
  plan.programs = {&set};
  SimResult r;
  std::string error;
  ASSERT_TRUE(simulate(b.table, plan, unitDevices(2), {}, r, error)) << error;
  EXPECT_NEAR(r.ranks[1].endSeconds, 4, 1e-9);
  EXPECT_NEAR(r.ranks[1].computeSeconds, 2, 1e-9);
}

TEST(Replay, MeasuredTimesReplaceTheModel) {
  Builder b;
  uint32_t work = b.compute("work", 3);
  ProgramSet set;
  StageProgram prog;
  prog.steps = {Step{work}, Step{work}};
  set.stages.push_back(prog);
  PlanShape plan;
  plan.grid = {0};
  plan.programs = {&set};
  SimOptions options;
  options.trace = true;
  options.measured = [](const Event &, const DeviceModel &) {
    return std::optional<double>(0.25);
  };
  SimResult r;
  std::string error;
  ASSERT_TRUE(simulate(b.table, plan, unitDevices(1), options, r, error));
  EXPECT_DOUBLE_EQ(r.iterationSeconds, 0.5);
  ASSERT_EQ(r.intervals.size(), 2u);
  EXPECT_DOUBLE_EQ(r.intervals[1].start, 0.25);
}

} // namespace

namespace {

TEST(ProfileDb, RoundTripsAndFeedsTheSimulator) {
  ProfileDb db;
  db.machine = "test box";
  db.commit = "abc123";
  db.created = "2026-11-23T00:00:00Z";
  db.set("cpu threads=1", "whale.matmul a -> b", {2.5e-5, 40, true});
  db.set("A100-80GB", "whale.add c -> d", {1e-6, 7, false});
  ProfileDb back;
  std::string error;
  ASSERT_TRUE(back.parse(db.toJson(), "db.json", error)) << error;
  EXPECT_EQ(back.machine, "test box");
  EXPECT_EQ(back.commit, "abc123");
  EXPECT_EQ(back.size(), 2u);
  EXPECT_EQ(back.lookup("cpu threads=1", "whale.matmul a -> b"), 2.5e-5);
  EXPECT_EQ(back.lookup("A100-80GB", "whale.add c -> d"), 1e-6);
  EXPECT_EQ(back.lookup("A100-80GB", "whale.matmul a -> b"), std::nullopt);
  // What the simulator asks: an event's key on a device's class.
  Event e;
  e.op = "whale.add";
  e.signature = "c -> d";
  MeasuredTime measured = back.measuredTime();
  EXPECT_EQ(measured(e, *findGpuModel("A100-80GB")), 1e-6);
  EXPECT_EQ(measured(e, *findGpuModel("H200")), std::nullopt);
  EXPECT_EQ(ProfileDb::deviceKey(cpuModel(1e10, 3, 0)), "cpu threads=3");
}

/// A product event: `op` of batch x m x n over k, fp32 or bf16.
Event product(const char *op, int64_t batch, int64_t m, int64_t n, int64_t k,
              bool bf16 = false) {
  Event e;
  e.op = op;
  auto t = [](std::initializer_list<int64_t> dims) {
    std::string s = "tensor<";
    for (int64_t d : dims)
      s += std::to_string(d) + "x";
    return s + "f32>";
  };
  e.signature = t({batch, m, k}) + ", " + t({k, n}) + " -> " +
                t({batch, m, n}) + (bf16 ? " bf16" : "");
  e.cost.matmul = true;
  e.cost.bf16 = bf16;
  e.cost.batch = batch;
  e.cost.m = m;
  e.cost.n = n;
  e.cost.k = k;
  e.cost.flops = 2.0 * batch * m * n * k;
  e.cost.bytes = 4.0 * batch * (m * k + k * n + m * n);
  return e;
}

TEST(ProfileDb, AnEventNotTimedIsPricedFromTheNearestOfItsFamily) {
  const DeviceModel a100 = *findGpuModel("A100-80GB");
  const std::string gpu = ProfileDb::deviceKey(a100);
  // Two products timed: a small one at twice the model's time, a large
  // one at 1.25 times.
  const Event small = product("whale.matmul", 1, 256, 256, 256);
  const Event large = product("whale.matmul", 1, 8192, 8192, 8192);
  ProfileDb db;
  db.set(gpu, small, {2 * opSeconds(small.cost, a100), 10, true});
  db.set(gpu, large, {1.25 * opSeconds(large.cost, a100), 10, true});
  // Kept through the file, shape and all.
  ProfileDb back;
  std::string error;
  ASSERT_TRUE(back.parse(db.toJson(), "db.json", error)) << error;
  MeasuredTime measured = back.measuredTime();

  // Timed: its own time.
  EXPECT_DOUBLE_EQ(*measured(large, a100), 1.25 * opSeconds(large.cost, a100));
  EXPECT_EQ(back.pricing(large, a100), ProfileDb::Pricing::Measured);
  // Not timed: the model's time, at the nearest one's measured ratio.
  const Event wide = product("whale.matmul", 4, 6144, 12288, 6144);
  EXPECT_DOUBLE_EQ(*measured(wide, a100), 1.25 * opSeconds(wide.cost, a100));
  EXPECT_EQ(back.pricing(wide, a100), ProfileDb::Pricing::Nearest);
  const Event narrow = product("whale.matmul", 1, 512, 128, 384);
  EXPECT_DOUBLE_EQ(*measured(narrow, a100), 2 * opSeconds(narrow.cost, a100));

  // Only products of the same op and precision stand for each other, and
  // only on the device class that timed them; the rest is the model's.
  EXPECT_EQ(measured(product("whale.matmul_grad", 1, 8192, 8192, 8192), a100),
            std::nullopt);
  EXPECT_EQ(measured(product("whale.matmul", 1, 8192, 8192, 8192, true), a100),
            std::nullopt);
  EXPECT_EQ(measured(wide, *findGpuModel("H100-SXM")), std::nullopt);
  // Another op by its bytes and FLOPs: an add of 4 MB timed at three times
  // the model prices one of 16 MB at three times too, but not an add of
  // another rank (a broadcast streams differently), nor another op.
  auto add = [](const char *op, const std::string &type, double bytes) {
    Event e;
    e.op = op;
    e.signature = type + ", " + type + " -> " + type;
    e.cost.bytes = bytes;
    e.cost.flops = bytes / 12;
    return e;
  };
  const Event timedAdd =
      add("whale.add", "tensor<1024x1024xf32>", 12.0 * (1 << 20));
  db.set(gpu, timedAdd, {3 * opSeconds(timedAdd.cost, a100), 5, true});
  MeasuredTime withAdd = db.measuredTime();
  const Event bigAdd =
      add("whale.add", "tensor<2048x2048xf32>", 48.0 * (1 << 20));
  EXPECT_DOUBLE_EQ(*withAdd(bigAdd, a100), 3 * opSeconds(bigAdd.cost, a100));
  EXPECT_EQ(db.pricing(bigAdd, a100), ProfileDb::Pricing::Nearest);
  EXPECT_EQ(withAdd(add("whale.add", "tensor<64x64x64xf32>", 1e6), a100),
            std::nullopt);
  const Event mul = add("whale.mul", "tensor<2048x2048xf32>", 48.0 * (1 << 20));
  EXPECT_EQ(db.pricing(mul, a100), ProfileDb::Pricing::Model);

  // Never faster than the fastest product timed: a small product timed at
  // a tenth of the model's time (faster than its data sheet) prices a
  // large one at its own rate, not at the model's better curve for it.
  EXPECT_DOUBLE_EQ(back.fastestProductRate(gpu),
                   large.cost.flops / (1.25 * opSeconds(large.cost, a100)));
  ProfileDb fast;
  fast.set(gpu, small, {0.1 * opSeconds(small.cost, a100), 10, true});
  const double rate = small.cost.flops / (0.1 * opSeconds(small.cost, a100));
  EXPECT_DOUBLE_EQ(*fast.measuredTime()(large, a100), large.cost.flops / rate);

  // A database whose product is not one says where.
  std::string bad = db.toJson();
  bad.replace(bad.find("\"m\": 256"), 8, "\"m\": -2");
  EXPECT_FALSE(back.parse(bad, "db.json", error));
  EXPECT_EQ(error.rfind("db.json: devices[0].events[1].cost.m must be a "
                        "whole number from 1",
                        0),
            0u)
      << error;
}

// A convolution's product is a direct kernel's (priced by its tiles on a
// CPU, not by a BLAS's copies): the file keeps that, so an untimed
// convolution is scaled from a timed one priced the same way.
TEST(ProfileDb, AConvolutionStaysADirectKernelsProductThroughTheFile) {
  DeviceModel cpu = cpuModel(100e9, 1, 0);
  cpu.memoryBandwidth = 25e9;
  const std::string key = ProfileDb::deviceKey(cpu);
  Event timed = product("whale.conv2d", 1, 64, 4096, 576);
  timed.cost.direct = true;
  ProfileDb db;
  db.set(key, timed, {1.5 * opSeconds(timed.cost, cpu), 10, true});
  ProfileDb back;
  std::string error;
  ASSERT_TRUE(back.parse(db.toJson(), "db.json", error)) << error;
  // Smaller, so its scaled time is above the timed one's rate (the floor
  // measuredTime keeps).
  Event other = product("whale.conv2d", 1, 32, 1024, 288);
  other.cost.direct = true;
  EXPECT_DOUBLE_EQ(*back.measuredTime()(other, cpu),
                   1.5 * opSeconds(other.cost, cpu));
  // A database written before "direct" was recorded still reads.
  EXPECT_TRUE(back.parse(
      R"({"version": 1, "devices": [{"device": "cpu threads=1", "events": [)"
      R"({"event": "whale.matmul x", "seconds": 1e-3, "runs": 3,)"
      R"( "in_context": true, "cost": {"flops": 1e6, "bytes": 1e4, "m": 8,)"
      R"( "n": 8, "k": 8, "batch": 1, "bf16": false}}]}]})",
      "old.json", error))
      << error;
}

TEST(ProfileDb, ADevicesOwnTimesComeFirstAndSetItApart) {
  // A profile of two alike devices: their class's mean, 2 s, and device
  // 0's own 3 s (device 1's own 1 s is left out, so it falls back).
  ProfileDb db;
  DeviceModel cpu = cpuModel(1e10, 1, 0);
  auto cluster = [&](int64_t n, double secondRate) {
    Topology t;
    for (int64_t d = 0; d < n; ++d) {
      t.devices.push_back(d == 1 ? cpuModel(secondRate, 1, 0) : cpu);
      t.node.push_back(0);
    }
    return t;
  };
  const Topology profiled = cluster(2, 1e10);
  Builder b;
  uint32_t work = b.compute("work", 1), ar = b.allReduce(8);
  const std::string key = b.table[work].key();
  db.set(ProfileDb::deviceKey(cpu), key, {2.0, 10, true});
  db.set(ProfileDb::ownKey(profiled, 0), key, {3.0, 5, true});
  EXPECT_EQ(ProfileDb::ownKey(profiled, 0).rfind("cpu threads=1 #0 of 2 (", 0),
            0u);
  EXPECT_EQ(db.ownTimesOf(profiled, 0), ProfileDb::ownKey(profiled, 0));
  EXPECT_EQ(db.ownTimesOf(profiled, 1), "");
  // Only the profiled cluster finds them: not one of another size, nor one
  // of the same size whose devices differ.
  EXPECT_EQ(db.ownTimesOf(cluster(4, 1e10), 0), "");
  EXPECT_EQ(db.ownTimesOf(cluster(2, 3e10), 0), "");

  ProgramSet set;
  StageProgram prog;
  prog.steps = {Step{work}, collectiveStep(ar, 0)};
  set.stages.push_back(prog);
  PlanShape plan;
  plan.replicas = 2;
  plan.grid = {0, 1};
  plan.programs = {&set, &set};
  SimOptions options;
  options.measured = db.measuredTime();
  options.measuredCollective = [](const Event &, int64_t, const DeviceModel &) {
    return std::optional<double>(0.5);
  };
  auto replay = [&](bool own) {
    Topology t;
    for (int64_t d = 0; d < 2; ++d) {
      t.devices.push_back(cpu);
      if (own)
        t.devices.back().ownTimes = db.ownTimesOf(profiled, d);
      t.node.push_back(0);
    }
    SimResult r;
    std::string error;
    EXPECT_TRUE(simulate(b.table, plan, t, options, r, error)) << error;
    return r;
  };
  // By class: both replicas alike, one replayed, 2 s of work.
  SimResult byClass = replay(false);
  EXPECT_EQ(byClass.ranks.size(), 1u);
  EXPECT_DOUBLE_EQ(byClass.iterationSeconds, 2.5);
  // Own times: device 0 works 3 s and device 1 waits for it.
  SimResult own = replay(true);
  ASSERT_EQ(own.ranks.size(), 2u);
  EXPECT_DOUBLE_EQ(own.iterationSeconds, 3.5);
  EXPECT_DOUBLE_EQ(own.ranks[1].idleSeconds, 1.0);

  // The own times survive the round trip.
  ProfileDb back;
  std::string error;
  ASSERT_TRUE(back.parse(db.toJson(), "db.json", error)) << error;
  EXPECT_EQ(back.lookup(ProfileDb::ownKey(profiled, 0), key), 3.0);
}

TEST(ProfileDb, SeveralDatabasesGiveEachEventTheMedianOfTheirTimes) {
  auto one = [](std::initializer_list<std::pair<const char *, double>> es) {
    ProfileDb db;
    db.machine = "m";
    for (auto [event, seconds] : es)
      db.set("cpu threads=1", event, {seconds, 10, true});
    return db;
  };
  // "a" in three (odd: the middle), "b" in two (the mean of both), "c" in
  // one (its own).
  ProfileDb db = ProfileDb::combine({one({{"a", 3.0}, {"b", 1.0}}),
                                     one({{"a", 1.0}, {"c", 7.0}}),
                                     one({{"a", 2.0}, {"b", 4.0}})});
  EXPECT_EQ(db.lookup("cpu threads=1", "a"), 2.0);
  EXPECT_EQ(db.lookup("cpu threads=1", "b"), 2.5);
  EXPECT_EQ(db.lookup("cpu threads=1", "c"), 7.0);
  EXPECT_FALSE(db.lookup("cpu threads=1", "d"));
  EXPECT_EQ(db.size(), 3u);
  EXPECT_EQ(db.machine, "m");
  // The runs add up, and survive the round trip.
  ProfileDb back;
  std::string error;
  ASSERT_TRUE(back.parse(db.toJson(), "combined.json", error)) << error;
  EXPECT_EQ(back.lookup("cpu threads=1", "a"), 2.0);
  EXPECT_NE(db.toJson().find("\"runs\": 30"), std::string::npos);
  // One database is itself.
  ProfileDb same = ProfileDb::combine({one({{"a", 3.0}})});
  EXPECT_EQ(same.lookup("cpu threads=1", "a"), 3.0);
}

// What a writer keeps the reader takes (issue 92 item 15): an event at the
// limit round-trips, one past it is refused by withinLimits before it is
// written (profile --from-trace wrote databases sim refused).
TEST(ProfileDb, TheWriterAndTheReaderShareOneLimit) {
  ProfileDb db;
  db.machine = "m";
  db.set("cpu threads=1", "at", {ProfileDb::kMaxEventSeconds, 1, true});
  EXPECT_EQ(db.withinLimits(), "");
  ProfileDb back;
  std::string error;
  ASSERT_TRUE(back.parse(db.toJson(), "limit.json", error)) << error;
  EXPECT_EQ(back.lookup("cpu threads=1", "at"), ProfileDb::kMaxEventSeconds);
  db.set("cpu threads=1", "past",
         {ProfileDb::kMaxEventSeconds * 1.01, 1, true});
  const std::string err = db.withinLimits();
  EXPECT_NE(err.find("the event 'past' on cpu threads=1"), std::string::npos)
      << err;
  EXPECT_FALSE(back.parse(db.toJson(), "past.json", error));
}

TEST(ProfileDb, BadDatabasesSayWhere) {
  ProfileDb db;
  std::string error;
  EXPECT_FALSE(db.parse("{", "p.json", error));
  EXPECT_NE(error.find("p.json: "), std::string::npos) << error;
  EXPECT_FALSE(db.parse(R"({"version": 1, "devices": [{"device": "x",
      "events": [{"event": "e"}]}]})",
                        "p.json", error));
  EXPECT_EQ(error, "p.json: devices[0].events[0]: expected {\"event\": KEY, "
                   "\"seconds\": S}");
  EXPECT_FALSE(db.parse(R"({"version": 1, "devices": [{"device": "x",
      "events": [{"event": "e", "seconds": 1e999}]}]})",
                        "p.json", error));
  EXPECT_NE(error.find("devices[0].events[0].seconds must be a finite number "
                       "from 0 to 1e+06, not infinity"),
            std::string::npos)
      << error;
  EXPECT_FALSE(db.parse(R"([1, 2])", "p.json", error));
  EXPECT_NE(error.find("not a profile database"), std::string::npos);
  // A product's "direct" is a yes or a no.
  EXPECT_FALSE(db.parse(
      R"({"version": 1, "devices": [{"device": "x", "events": [{"event": "e",)"
      R"( "seconds": 1, "runs": 1, "in_context": true, "cost": {"flops": 1,)"
      R"( "bytes": 1, "m": 1, "n": 1, "k": 1, "batch": 1, "bf16": false,)"
      R"( "direct": 3}}]}]})",
      "p.json", error));
  EXPECT_NE(error.find("p.json: devices[0].events[0].cost.direct must be "
                       "true or false, not 3"),
            std::string::npos)
      << error;
}

} // namespace
