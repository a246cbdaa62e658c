//===- StepGraphsTest.cpp - train steps held by the device and replayed ---===//
//
// No GPU runs here, so a CPU device stands in for one that holds a step
// (runtime/core/StepCapture.h): while it captures, each op it is asked for
// is recorded instead of run, and a replay runs the records in order, an
// Adam update with the replay's train state (AdamParams::at), as the CUDA
// device's graph copies each replay's scalars before the kernel. Through
// the drivers' own path (runStep) on a small regression program: the
// phases (warm-up, probe, capture, replay), the same losses and
// parameters bit for bit as a CPU that runs every op, the held memory, a
// step that cannot be held, a capture that fails, and state copied in.
//
//===----------------------------------------------------------------------===//

#include "../RuntimeFixture.h"
#include "runtime/capi/CApiInternal.h"
#include "runtime/run/RankStep.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <optional>

namespace {

using whale::OpenedRank;
using whale::RankGraph;
using whale::rt::CachingAllocator;
using whale::rt::CapturedStep;
using whale::rt::Status;
using whale::rt::StepCapture;
using whale::rt::TrainState;
using whale::rt::View;
using whale::testing::TestRuntime;
using Phase = RankGraph::Phase;

/// A CPU device that holds a step as a GPU's graph would, for the ops the
/// program below uses.
class HoldingDevice : public whale::rt::CpuDevice, public StepCapture {
public:
  HoldingDevice() : CpuDevice("holding:0", {}) {}

  StepCapture *stepCapture() override { return this; }
  void probe(bool on) override { probing = on; }
  const std::string &blocker() const override { return why; }
  Status begin() override {
    records.clear();
    why.clear();
    active = true;
    cache().beginHold();
    return Status::ok();
  }
  bool capturing() const override { return active; }
  Status end(CapturedStep &held) override {
    active = false;
    if (!failEnd.empty())
      return Status::internal(failEnd);
    cache().endHold();
    holding = true;
    held.operations = held.kernels = static_cast<int64_t>(records.size());
    return Status::ok();
  }
  Status replay(const TrainState &s) override {
    if (!holding)
      return Status::invalid("no captured step to replay");
    ++replays;
    for (const auto &op : records)
      if (Status st = op(&s); !st)
        return st;
    return Status::ok();
  }
  void drop() override {
    active = false;
    holding = false;
    records.clear();
    cache().releaseHeld();
  }

  Status fill(void *data, whale::rt::DType dtype, int64_t n,
              double value) override {
    return held([=](const TrainState *) {
      return CpuDevice::fill(data, dtype, n, value);
    });
  }
  Status matmul(View<const float> a, View<const float> b, View<float> out,
                bool ta, bool tb) override {
    return held([=](const TrainState *) {
      return CpuDevice::matmul(a, b, out, ta, tb);
    });
  }
  Status matmulBackward(View<const float> a, View<const float> b,
                        View<const float> dout, View<float> *da,
                        View<float> *db, bool ta, bool tb) override {
    std::optional<View<float>> dA, dB;
    if (da)
      dA = *da;
    if (db)
      dB = *db;
    return held([=](const TrainState *) mutable {
      return CpuDevice::matmulBackward(a, b, dout, dA ? &*dA : nullptr,
                                       dB ? &*dB : nullptr, ta, tb);
    });
  }
  Status reduce(whale::rt::ReduceOp op, View<const float> x,
                const std::vector<int64_t> &axes, View<float> out) override {
    return held([=](const TrainState *) {
      return CpuDevice::reduce(op, x, axes, out);
    });
  }
  Status reduceBackward(whale::rt::ReduceOp op, View<const float> x,
                        const std::vector<int64_t> &axes,
                        View<const float> dout, View<float> dx) override {
    return held([=](const TrainState *) {
      return CpuDevice::reduceBackward(op, x, axes, dout, dx);
    });
  }
  Status adamSteps(const std::vector<AdamSlot> &slots,
                   const whale::rt::AdamParams &p) override {
    if (adamReadsHost && (probing || active) && why.empty())
      why = "the update is read on the host";
    return held([=](const TrainState *s) {
      return CpuDevice::adamSteps(slots, s && p.scheduled ? p.at(*s) : p);
    });
  }
  /// The host reads the norm: what a held step cannot do.
  Status sumSquares(const std::vector<View<float>> &views,
                    double &out) override {
    if ((probing || active) && why.empty())
      why = "the norm is read on the host";
    if (active)
      return Status::invalid(why);
    return CpuDevice::sumSquares(views, out);
  }

  CachingAllocator &cache() {
    return static_cast<CachingAllocator &>(allocator());
  }

  std::string failEnd;        ///< set: end() fails with it
  bool adamReadsHost = false; ///< Adam's update notes a blocker
  int replays = 0;
  size_t recorded() const { return records.size(); }

private:
  using Op = std::function<Status(const TrainState *)>;
  Status held(Op op) {
    if (!active)
      return op(nullptr);
    records.push_back(std::move(op));
    return Status::ok();
  }

  bool probing = false, active = false, holding = false;
  std::string why;
  std::vector<Op> records;
};

constexpr int64_t kRows = 4, kIn = 3, kOut = 2;

/// loss = mean(x @ w); w by Adam, at the context's step and lr scale.
/// With `readNorm`, the gradient's norm comes back to the host.
template <bool readNorm>
int32_t regression(whale_rt_context *ctx, whale_rt_tensor *const *inputs,
                   whale_rt_tensor **loss) {
  const int64_t wShape[2] = {kIn, kOut}, yShape[2] = {kRows, kOut};
  const double init[2] = {0.0, 0.5};
  whale_rt_tensor *w = nullptr, *y = nullptr, *l = nullptr, *dl = nullptr,
                  *dy = nullptr, *dw = nullptr;
  const int64_t axes[2] = {0, 1};
  int32_t st =
      whale_rt_param(ctx, "w", WHALE_RT_INIT_NORMAL, init, 2, 2, wShape, &w);
  st = st ? st : whale_rt_tensor_create(ctx, WHALE_RT_F32, 2, yShape, &y);
  st = st ? st : whale_rt_tensor_create(ctx, WHALE_RT_F32, 0, nullptr, &l);
  st = st ? st : whale_rt_tensor_create(ctx, WHALE_RT_F32, 0, nullptr, &dl);
  st = st ? st : whale_rt_tensor_create(ctx, WHALE_RT_F32, 2, yShape, &dy);
  st = st ? st : whale_rt_tensor_create(ctx, WHALE_RT_F32, 2, wShape, &dw);
  st = st ? st : whale_rt_matmul(ctx, inputs[0], w, y, 0, 0);
  st = st ? st : whale_rt_reduce(ctx, WHALE_RT_MEAN, y, 2, axes, l);
  st = st ? st : whale_rt_fill(ctx, dl, 1.0);
  st = st ? st : whale_rt_reduce_grad(ctx, WHALE_RT_MEAN, y, 2, axes, dl, dy);
  st = st ? st : whale_rt_matmul_grad(ctx, inputs[0], w, dy, nullptr, dw, 0, 0);
  double norm = 0;
  if (readNorm)
    st = st ? st : whale_rt_clip_grad_norm(ctx, 1, &dw, 100.0, &norm);
  st =
      st ? st
         : whale_rt_adam_steps(ctx, 1, &w, &dw, 0.1, 0.9, 0.999, 1e-8, 0.01, 1);
  for (whale_rt_tensor *t : {y, dl, dy, dw})
    if (t)
      whale_rt_tensor_release(ctx, t);
  *loss = l;
  return st;
}

/// One rank on a holding device, or on a plain CPU; the global batch on
/// the host; the loss and `w` after each step.
struct OneRank {
  TestRuntime host;
  std::vector<whale_rt_tensor *> global;
  std::vector<OpenedRank> ranks;
  whale::RankThreads threads;
  HoldingDevice *device = nullptr;
  std::vector<double> losses;

  OneRank(bool holding, whale::RankEntry entry) {
    std::vector<float> x(kRows * kIn);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = 0.25f * static_cast<float>(i % 5) - 0.4f;
    global.push_back(host.f32({kRows, kIn}, x));
    OpenedRank rank;
    rank.ctx.reset(whale_rt_context_create("cpu:0", 1, 0, 7));
    if (holding) {
      auto owned = std::make_unique<HoldingDevice>();
      device = owned.get();
      rank.ctx->device = std::move(owned);
    }
    rank.entry = entry;
    const int64_t shape[2] = {kRows, kIn};
    whale_rt_tensor *in = nullptr;
    EXPECT_EQ(
        whale_rt_tensor_create(rank.ctx.get(), WHALE_RT_F32, 2, shape, &in),
        WHALE_RT_OK);
    rank.inputs.push_back(in);
    ranks.push_back(std::move(rank));
  }
  whale_rt_context *ctx() { return ranks[0].ctx.get(); }
  RankGraph &graph() { return ranks[0].graph; }

  /// Step `step` (0-based), the schedule's factor changing every step.
  void step(int64_t step) {
    whale::StepOutcome out =
        whale::runStep(ranks, global, nullptr, threads, step, 1.0 / (1 + step));
    ASSERT_EQ(out.error, "");
    losses.push_back(out.losses[0]);
  }
  std::vector<float> w() {
    whale_rt_tensor *t = ctx()->params.at("w").get();
    std::vector<float> v(kIn * kOut);
    EXPECT_EQ(whale_rt_tensor_read(ctx(), t, v.data(), v.size() * 4),
              WHALE_RT_OK);
    return v;
  }
};

TEST(StepGraphs, HeldStepsReplayTheStepsACpuRunsOpByOp) {
  OneRank held(true, regression<false>), cpu(false, regression<false>);
  const Phase after[] = {Phase::Probe,  Phase::Capture, Phase::Replay,
                         Phase::Replay, Phase::Replay,  Phase::Replay};
  for (int64_t s = 0; s < 6; ++s) {
    held.step(s);
    cpu.step(s);
    EXPECT_EQ(held.graph().phase, after[s]) << "after step " << s + 1;
  }
  // Bit for bit: the replays used each step's own lr scale and step.
  EXPECT_EQ(held.losses, cpu.losses);
  EXPECT_EQ(held.w(), cpu.w());
  EXPECT_NE(held.losses[2], held.losses[5]); // the parameters moved
  // Step 3 was captured (6 ops: matmul, reduce, fill, its gradient, the
  // matmul's and Adam) and run by a replay, as steps 4 to 6 were.
  EXPECT_EQ(held.graph().capturedAt, 3);
  EXPECT_EQ(held.graph().held[0], 6);
  EXPECT_EQ(held.device->replays, 4);
  EXPECT_EQ(held.graph().replays, 4);
  EXPECT_EQ(whale::graphReport(held.ranks),
            "step 3 captured as a CUDA graph of 6 operations (6 kernels, 0 "
            "copies, 0 fills); 4 steps replayed it, one launch each");
  // The CPU cannot hold a step: nothing to report.
  EXPECT_EQ(cpu.graph().phase, Phase::Off);
  EXPECT_FALSE(cpu.graph().capable);
  EXPECT_EQ(whale::graphReport(cpu.ranks), "");
}

TEST(StepGraphs, TheHeldStepKeepsItsMemoryUntilItIsDropped) {
  OneRank held(true, regression<false>);
  for (int64_t s = 0; s < 3; ++s)
    held.step(s);
  // The step's temporaries (y, dl, dy, dw), given back during the capture,
  // are the replays': set aside, not cached for others.
  CachingAllocator &cache = held.device->cache();
  EXPECT_GE(cache.heldBytes(), 4 * 512);
  const int64_t cachedBefore = cache.cachedBytes();
  whale::forgetGraph(held.ctx(), held.graph());
  EXPECT_EQ(cache.heldBytes(), 0);
  EXPECT_GT(cache.cachedBytes(), cachedBefore);
  EXPECT_EQ(held.graph().phase, Phase::Capture);
  EXPECT_EQ(held.graph().loss, nullptr);
  // The next step captures afresh, and the run goes on the same.
  OneRank cpu(false, regression<false>);
  for (int64_t s = 0; s < 3; ++s)
    cpu.step(s);
  held.step(3);
  cpu.step(3);
  EXPECT_EQ(held.graph().phase, Phase::Replay);
  EXPECT_EQ(held.graph().capturedAt, 4);
  held.step(4);
  cpu.step(4);
  EXPECT_EQ(held.losses, cpu.losses);
  EXPECT_EQ(held.w(), cpu.w());
}

TEST(StepGraphs, AStepThatReadsOnTheHostRunsOpByOpAndSaysWhy) {
  OneRank held(true, regression<true>), cpu(false, regression<true>);
  for (int64_t s = 0; s < 4; ++s) {
    held.step(s);
    cpu.step(s);
  }
  EXPECT_EQ(held.graph().phase, Phase::Off);
  EXPECT_EQ(held.graph().capturedAt, 0);
  EXPECT_EQ(held.device->replays, 0);
  EXPECT_EQ(whale::graphReport(held.ranks),
            "steps ran op by op, not as a CUDA graph: the norm is read on "
            "the host");
  EXPECT_EQ(held.losses, cpu.losses);
  // Where the device finds it during an op the C ABI names, the op leads.
  OneRank adam(true, regression<false>);
  adam.device->adamReadsHost = true;
  for (int64_t s = 0; s < 3; ++s)
    adam.step(s);
  EXPECT_EQ(whale::graphReport(adam.ranks),
            "steps ran op by op, not as a CUDA graph: adam_update: the update "
            "is read on the host");
}

TEST(StepGraphs, AFailedCaptureRunsTheStepAgainAndFreesWhatItMade) {
  OneRank held(true, regression<false>), cpu(false, regression<false>);
  held.device->failEnd = "instantiating the graph failed (test)";
  for (int64_t s = 0; s < 2; ++s) {
    held.step(s);
    cpu.step(s);
  }
  const int64_t inUse = whale_rt_memory_in_use(held.ctx());
  held.step(2); // captured, fails at its end, runs again op by op
  cpu.step(2);
  EXPECT_EQ(whale_rt_memory_in_use(held.ctx()), inUse);
  EXPECT_EQ(held.graph().phase, Phase::Off);
  EXPECT_EQ(held.graph().why, "instantiating the graph failed (test)");
  EXPECT_EQ(held.device->cache().heldBytes(), 0);
  held.step(3);
  cpu.step(3);
  EXPECT_EQ(held.losses, cpu.losses);
  EXPECT_EQ(held.w(), cpu.w());
}

TEST(StepGraphs, TheCApiRefusesWhereNoStepCanBeHeld) {
  TestRuntime cpu;
  EXPECT_EQ(whale_rt_step_capture_probe(cpu.ctx, 1), WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(cpu.ctx),
               "cpu:0 runs each op as it is called: it cannot hold a step");
  EXPECT_EQ(whale_rt_step_capture_begin(cpu.ctx), WHALE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(whale_rt_step_replay(cpu.ctx), WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_step_capture_blocker(cpu.ctx), "");
  whale_rt_step_capture_drop(cpu.ctx); // nothing held: nothing to do
  // Replaying before anything was captured is an error, not a crash.
  OneRank held(true, regression<false>);
  EXPECT_EQ(whale_rt_step_replay(held.ctx()), WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(held.ctx()), "no captured step to replay");
  // A traced step times each op as it runs: no capture.
  ASSERT_EQ(whale_rt_enable_trace(held.ctx()), WHALE_RT_OK);
  EXPECT_EQ(whale_rt_step_capture_begin(held.ctx()), WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(held.ctx()),
               "the step is traced, which times each op as it runs");
}

} // namespace
