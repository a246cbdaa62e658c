//===- BalanceTest.cpp - balanced plans train like one device -------------===//
//
// Devices of different speeds get different shares of the global batch,
// and devices short of memory shed samples to others; every such plan must
// still train to the losses and parameters of one device (the gradient of
// each replica weighted by its share), and fit the memory it was given.
// Rates here are declared, and low: at 1e8 to 3e8 FLOP/s every op is bound
// by its arithmetic, not its memory traffic (8 GB/s a thread, alike on
// every device), so the shares follow the rates' ratios exactly. Devices
// that differ in threads balance by how the device model says their ops
// scale (test/lit/Tools/plan-balance.test).
//
//===----------------------------------------------------------------------===//

#include "test/unit/EquivalenceSupport.h"
#include "test/unit/TempPath.h"

namespace {

using namespace whale::testing;

std::vector<int64_t> sharesOf(const whale::TrainResult &r) {
  return r.localBatches;
}

/// `text` cut by auto_parallel into a two-stage pipeline of 4 micro-batches.
std::string autoParallel(const std::string &text) {
  return edit(text, "model mlp",
              "config {\n  auto_parallel = true\n  num_task_graph = 2\n  "
              "num_micro_batch = 4\n}\n\nmodel mlp");
}

TEST(Balance, UnevenBatchOverTwoDevices) {
  whale::TrainResult planned;
  expectEquivalent(source(kMlp), kMlp, "cpu:1@flops=3e8,cpu:1@flops=1e8",
                   &planned);
  EXPECT_EQ(sharesOf(planned), (std::vector<int64_t>{48, 16}));
}

TEST(Balance, UnevenBatchOverThreeDevicesOfThreeSpeeds) {
  whale::TrainResult planned;
  expectEquivalent(source(kMlp), kMlp,
                   "cpu:1@flops=3e8,cpu:1@flops=2e8,cpu:1@flops=1e8", &planned);
  // 64 x 3/6, 2/6, 1/6 = 32, 21.3, 10.7: the largest remainder rounds up.
  EXPECT_EQ(sharesOf(planned), (std::vector<int64_t>{32, 21, 11}));
}

TEST(Balance, ABatchThatDoesNotDivideOverEqualDevices) {
  // Balanced by hardware, 61 samples over 3 equal devices are 21, 20, 20
  // (largest remainder), each replica's gradient weighted by its share.
  whale::TrainResult planned;
  expectEquivalent(edit(source(kMlp), "batch = 64", "batch = 61"), kMlp,
                   "cpu:3", &planned);
  EXPECT_EQ(sharesOf(planned), (std::vector<int64_t>{21, 20, 20}));
  // With balance = "even" the batch must divide, and the error says so.
  whale::TrainResult even = trainText(
      edit(edit(source(kMlp), "batch = 64", "batch = 61"), "model mlp",
           "config {\n  balance = \"even\"\n}\n\nmodel mlp"),
      kMlp, "cpu:3");
  ASSERT_FALSE(even.ok);
  EXPECT_NE(even.error.find("or balance = \"hardware\""), std::string::npos)
      << even.error;
}

TEST(Balance, UnevenCopiesOfAPipeline) {
  // Two copies of a two-stage 1F1B pipeline, the second half as fast: each
  // copy's share is a whole number of its 4 micro-batches.
  whale::TrainResult planned;
  expectEquivalent(source(kMlpStages), kMlpStages,
                   "cpu:2@flops=2e8,cpu:2@flops=1e8", &planned);
  std::vector<int64_t> shares = sharesOf(planned);
  ASSERT_EQ(shares.size(), 4u);
  EXPECT_EQ(shares[0] + shares[2], 64);
  EXPECT_GT(shares[0], shares[2]);
  EXPECT_EQ(shares[0] % 4, 0);
}

TEST(Balance, UnevenShardGroupsOfTheHybrid) {
  // split(2) on four devices: two shard groups, each one share.
  whale::TrainResult planned;
  expectEquivalent(edit(source(kHybrid), "split {", "split(2) {"), kHybrid,
                   "cpu:2@flops=3e8,cpu:2@flops=1e8", &planned);
  EXPECT_EQ(sharesOf(planned), (std::vector<int64_t>{12, 12, 4, 4}));
}

TEST(Balance, UnevenShardsOfOneSplitTaskGraph) {
  // Megatron's pair over a fast and a slow device: the group's rows and
  // each split dimension are cut 3:1.
  whale::TrainResult planned;
  expectEquivalent(source(kMlpSplit), kMlpSplit,
                   "cpu:1@flops=3e8,cpu:1@flops=1e8", &planned);
  EXPECT_EQ(sharesOf(planned), (std::vector<int64_t>{48, 16}));
  // The fast device holds three quarters of the split parameters and of
  // the work, so it needs more memory than the slow one.
  ASSERT_EQ(planned.peakMemory.size(), 2u);
  EXPECT_GT(planned.peakMemory[0], planned.peakMemory[1]);
}

TEST(Balance, UnevenShardsInFineUnitsForA2To1Pair) {
  // Speeds 2:1 in 64 units: 43:21, odd part sizes (86 and 42 of w1's 128
  // columns); the 12-class bias no unit count divides stays whole.
  whale::TrainResult planned;
  expectEquivalent(source(kMlpSplit), kMlpSplit,
                   "cpu:1@flops=2e8,cpu:1@flops=1e8", &planned);
  EXPECT_EQ(sharesOf(planned), (std::vector<int64_t>{43, 21}));
}

TEST(Balance, UnevenShardsOfTheHybridsClasses) {
  // 2000 classes cut 1500/500: the sharded cross entropy finds each rank's
  // classes by the weights.
  whale::TrainResult planned;
  expectEquivalent(source(kHybrid), kHybrid, "cpu:1@flops=3e8,cpu:1@flops=1e8",
                   &planned);
  EXPECT_EQ(sharesOf(planned), (std::vector<int64_t>{24, 8}));
}

TEST(Balance, UnevenShardsInTwoGroupsSumTheirPartsGradients) {
  // Two groups of a fast and a slow device: part i of each group's
  // parameters is the same slice, so their gradients all-reduce.
  whale::TrainResult planned;
  expectEquivalent(edit(source(kHybrid), "split {", "split(2) {"), kHybrid,
                   "cpu:1@flops=3e8,cpu:1@flops=1e8,cpu:1@flops=3e8,"
                   "cpu:1@flops=1e8",
                   &planned);
  EXPECT_EQ(sharesOf(planned), (std::vector<int64_t>{12, 4, 12, 4}));
}

TEST(Balance, GptBlocksUnevenShards) {
  // Attention splits its heads 3:1 through the reshapes.
  std::string text =
      edit(source(kGpt), "num_micro_batch = 4", "num_micro_batch = 1");
  text = edit(text, "  replicate {", "  split {");
  text = edit(text, "  replicate {", "  split {");
  whale::TrainResult planned;
  expectEquivalent(text, kGpt, "cpu:1@flops=3e8,cpu:1@flops=1e8", &planned);
  EXPECT_EQ(sharesOf(planned), (std::vector<int64_t>{12, 4}));
}

TEST(Balance, UnevenShardsSaveAndResumeLikeAnUninterruptedRun) {
  // The checkpoint holds whole parameters, gathered from uneven parts, and
  // hands each rank its part back on load.
  const std::string ckpt =
      whale::testing::tempPath("mlp-split-uneven.safetensors");
  const std::string cluster = "cpu:1@flops=3e8,cpu:1@flops=1e8";
  auto run = [&](int steps, const std::string &save, const std::string &load) {
    whale::Interpreter interp;
    EXPECT_TRUE(interp.loadString(
        source(kMlpSplit), std::string(WHALE_SOURCE_DIR) + "/" + kMlpSplit));
    whale::TrainOptions opts;
    opts.steps = steps;
    opts.threads = 1;
    opts.cluster = cluster;
    opts.savePath = save;
    opts.loadPath = load;
    return whale::train(interp, opts);
  };
  whale::TrainResult straight = run(6, "", "");
  whale::TrainResult first = run(3, ckpt, "");
  whale::TrainResult resumed = run(6, "", ckpt);
  ASSERT_TRUE(straight.ok) << straight.error;
  ASSERT_TRUE(first.ok) << first.error;
  ASSERT_TRUE(resumed.ok) << resumed.error;
  ASSERT_EQ(resumed.losses.size(), 3u);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(resumed.losses[i], straight.losses[3 + i]) << "step " << i + 4;
}

TEST(Balance, GptUnevenDataParallel) {
  std::string text =
      edit(source(kGpt), "num_micro_batch = 4", "num_micro_batch = 1");
  whale::TrainResult planned;
  expectEquivalent(text, kGpt, "cpu:1@flops=2e8,cpu:1@flops=1e8", &planned);
  std::vector<int64_t> shares = sharesOf(planned);
  ASSERT_EQ(shares.size(), 2u);
  EXPECT_GT(shares[0], shares[1]);
}

} // namespace

namespace {

TEST(Balance, MemoryLimitShedsSamplesAndTheRunFitsIt) {
  // The fast device alone would take 48 samples; 200,000 bytes hold fewer,
  // so it sheds the rest to the slow one, and the run stays under the
  // limit the allocator enforces.
  whale::TrainResult planned;
  expectEquivalent(source(kMlp), kMlp,
                   "cpu:1@flops=3e8,mem=200000,cpu:1@flops=1e8", &planned);
  std::vector<int64_t> shares = sharesOf(planned);
  ASSERT_EQ(shares.size(), 2u);
  EXPECT_LT(shares[0], 48);
  EXPECT_GT(shares[0], shares[1]);
  EXPECT_EQ(shares[0] + shares[1], 64);
  ASSERT_EQ(planned.peakMemory.size(), 2u);
  EXPECT_LE(planned.peakMemory[0], 200000);
}

TEST(Balance, APlanThatCannotFitFailsBeforeTraining) {
  whale::TrainResult r =
      trainText(source(kMlp), kMlp,
                "cpu:1@flops=3e8,mem=150000,cpu:1@flops=1e8,mem=150000");
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("does not fit on device 0"), std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find("the cluster holds at most"), std::string::npos)
      << r.error;
  EXPECT_TRUE(r.losses.empty());
}

TEST(Balance, EvenPlanOnUnevenDevicesStillTrainsLikeOneDevice) {
  // balance = "even" splits the batch evenly over unequal devices, and
  // the run matches one device's losses and parameters.
  whale::TrainResult planned;
  expectEquivalent(edit(source(kMlp), "model mlp",
                        "config {\n  balance = \"even\"\n}\n\nmodel mlp"),
                   kMlp, "cpu:1@flops=3e8,cpu:1@flops=1e8", &planned);
  ASSERT_TRUE(planned.ok) << planned.error;
  EXPECT_EQ(planned.localBatches, (std::vector<int64_t>{32, 32}));
}

} // namespace

namespace {

TEST(Balance, AutoParallelCutByDeviceSpeed) {
  // auto_parallel cuts the model so each stage's step time follows its
  // device's speed; the pipeline still trains like one device.
  expectEquivalent(autoParallel(source(kMlp)), kMlp,
                   "cpu:1@flops=3e8,cpu:1@flops=1e8");
}

TEST(Balance, AutoParallelCutMovesToFitTheSmallDevice) {
  // The time-best cut would leave the second stage (on the device with
  // 60,000 bytes) the second layer and the loss: more than it holds. The
  // cut moves so it fits, the pipeline still trains like one device, and
  // the allocator, which enforces the limit, saw no more than that.
  const std::string text = autoParallel(source(kMlp));
  whale::TrainResult roomy, tight;
  expectEquivalent(text, kMlp, "cpu:1,mem=300000,cpu:1,mem=200000", &roomy);
  expectEquivalent(text, kMlp, "cpu:1,mem=300000,cpu:1,mem=60000", &tight);
  ASSERT_EQ(tight.peakMemory.size(), 2u);
  EXPECT_LE(tight.peakMemory[1], 60000);
  EXPECT_GT(roomy.peakMemory[1], 60000);
}

TEST(Balance, AutoParallelCutThatCannotFitFailsBeforeTraining) {
  whale::TrainResult r = trainText(autoParallel(source(kMlp)), kMlp,
                                   "cpu:1,mem=100000,cpu:1,mem=12000");
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("auto_parallel cannot cut it into 2 TaskGraphs that "
                         "fit their devices' memory: stage 1 (device 1, "
                         "12000 bytes)"),
            std::string::npos)
      << r.error;
  EXPECT_TRUE(r.losses.empty());
}

} // namespace

namespace {

/// A split TaskGraph of two linear layers with `middle` between them (`h`
/// in, `g` out), then a replicated loss.
std::string splitWith(const std::string &middle) {
  return "import nn\n"
         "model m(x: f32[B, 16], y: i32[B]) {\n"
         "  split {\n"
         "    h = nn.linear(x, 64)\n" +
         middle +
         "\n    o = nn.linear(g, 16)\n"
         "  }\n"
         "  replicate {\n"
         "    loss = mean(cross_entropy(o, y))\n"
         "  }\n"
         "  return loss\n"
         "}\n"
         "train m {\n"
         "  data = synthetic(batch = 16, seed = 1)\n"
         "  optimizer = adam(lr = 0.01)\n"
         "  steps = 5\n"
         "}\n";
}

const char *const kUnevenPairs[] = {"cpu:1@flops=3e8,cpu:1@flops=1e8",
                                    "cpu:1@flops=5e9,cpu:1@flops=3e9"};

TEST(Balance, UnevenShardsChooseOnePatternPerGroup) {
  // Each rank of an uneven group builds its program at its own weight;
  // the costs that choose a pattern are counted alike in all of them, so
  // they call the same collectives. These once chose differently (the
  // fast rank gathering where the slow one all-reduced).
  const char *middles[] = {
      "    g = softmax(h)",
      "    g = nn.norm(h)",
      "    g = h - mean(h, axis = 1, keepdim = true)",
      "    g = h - max(h, axis = 1, keepdim = true)",
      "    g = h * sum(h, axis = 1, keepdim = true)",
      "    g = concat([slice(h, 1, 32, 64), slice(h, 1, 0, 32)], axis = 1)",
  };
  for (const char *middle : middles)
    for (const char *cluster : kUnevenPairs) {
      SCOPED_TRACE(std::string(middle) + " on " + cluster);
      expectEquivalent(splitWith(middle), "uneven-pattern.whl", cluster);
    }
}

TEST(Balance, TransposeOfTransposeInASplitTaskGraph) {
  // The rows of the batch move with a transpose; a value whose first
  // dimension only happens to divide by the micro-batch is not rows.
  for (const char *middle :
       {"    g = transpose(transpose(h))",
        "    t = transpose(h)\n    g = transpose(t * 2.0)"})
    for (const char *cluster : {"cpu:2", kUnevenPairs[0], kUnevenPairs[1]}) {
      SCOPED_TRACE(std::string(middle) + " on " + cluster);
      expectEquivalent(splitWith(middle), "transpose-twice.whl", cluster);
    }
}

} // namespace

namespace {

TEST(Balance, ReplicateThenSplitOverGroupsOfDifferentSpeeds) {
  // replicate(2) then split(4) on 8 devices, a fast and a slow group: the
  // groups' shares differ (20 and 12 of a batch of 32), so each builds its
  // program at other rows; they still choose the same layouts for the
  // head (costs count the stage's mean rows), whose gradients they sum.
  const std::string text = "import nn\n"
                           "model m(x: f32[B, 16], y: i32[B]) {\n"
                           "  replicate(2) {\n"
                           "    h = relu(nn.linear(x, 32))\n"
                           "  }\n"
                           "  split(4) {\n"
                           "    o = nn.linear(h, 16)\n"
                           "    loss = mean(cross_entropy(o, y))\n"
                           "  }\n"
                           "  return loss\n"
                           "}\n"
                           "train m {\n"
                           "  data = synthetic(batch = 32, seed = 1)\n"
                           "  optimizer = adam(lr = 0.01)\n"
                           "  steps = 5\n"
                           "}\n";
  whale::TrainResult planned;
  expectEquivalent(text, "replicate-split.whl",
                   "cpu:4@flops=2e8,cpu:4@flops=1e8", &planned);
  EXPECT_EQ(sharesOf(planned), (std::vector<int64_t>{5, 5, 5, 5, 3, 3, 3, 3}));
  expectEquivalent(text, "replicate-split.whl",
                   "cpu:1@flops=3e8,cpu:1@flops=1e8,cpu:1@flops=2e8,"
                   "cpu:1@flops=1e8,cpu:1@flops=3e8,cpu:1@flops=1e8,"
                   "cpu:1@flops=2e8,cpu:1@flops=1e8");
}

} // namespace
