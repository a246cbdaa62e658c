//===- EquivalenceTest.cpp - every plan trains like one device ------------===//
//
// The numerical contract: a model trained under any plan gives the losses
// and parameters of the same model trained on one device (fp32, relative
// 1e-4 after 5 steps), with the same data order and global batch. Each case
// is a script (or a variant of one, with its config changed) and a cluster.
// Every rank runs one thread, as does the reference, so the only difference
// is the plan.
//
//===----------------------------------------------------------------------===//

#include "test/unit/EquivalenceSupport.h"

namespace {

using namespace whale::testing;

TEST(Equivalence, MlpDataParallelOverFourDevices) {
  expectEquivalent(source(kMlp), kMlp, "cpu:4");
}

TEST(Equivalence, MlpTwoStagesGPipe) {
  expectEquivalent(
      edit(source(kMlpStages), "schedule = \"1f1b\"", "schedule = \"gpipe\""),
      kMlpStages, "cpu:2");
}

TEST(Equivalence, MlpTwoStages1F1B) {
  expectEquivalent(source(kMlpStages), kMlpStages, "cpu:2");
}

TEST(Equivalence, MlpTwoStagesGPipeNestedDataParallel) {
  expectEquivalent(
      edit(source(kMlpStages), "schedule = \"1f1b\"", "schedule = \"gpipe\""),
      kMlpStages, "cpu:4");
}

TEST(Equivalence, MlpTwoStages1F1BNestedDataParallel) {
  expectEquivalent(source(kMlpStages), kMlpStages, "cpu:4");
}

TEST(Equivalence, MlpFourStagesOnFourDevices) {
  expectEquivalent(source("test/equivalence/mlp_four_stages.whl"),
                   "test/equivalence/mlp_four_stages.whl", "cpu:4");
}

TEST(Equivalence, MlpAutoParallelTwoTaskGraphs) {
  expectEquivalent(edit(source(kMlp), "model mlp",
                        "config {\n  auto_parallel = true\n  "
                        "num_task_graph = 2\n  num_micro_batch = 4\n}\n\n"
                        "model mlp"),
                   kMlp, "cpu:2");
}

TEST(Equivalence, MlpGradientAccumulationOnOneDevice) {
  expectEquivalent(edit(source(kMlp), "model mlp",
                        "config {\n  num_micro_batch = 4\n}\n\nmodel mlp"),
                   kMlp, "cpu:1");
}

TEST(Equivalence, GptDataParallelOverFourDevices) {
  expectEquivalent(
      edit(source(kGpt), "num_micro_batch = 4", "num_micro_batch = 1"), kGpt,
      "cpu:4");
}

TEST(Equivalence, GptTwoStagesGPipe) {
  expectEquivalent(
      edit(source(kGpt), "schedule = \"1f1b\"", "schedule = \"gpipe\""), kGpt,
      "cpu:2");
}

TEST(Equivalence, GptTwoStages1F1B) {
  expectEquivalent(source(kGpt), kGpt, "cpu:2");
}

TEST(Equivalence, GptTwoStagesNestedDataParallel) {
  expectEquivalent(source(kGpt), kGpt, "cpu:4");
  expectEquivalent(
      edit(source(kGpt), "schedule = \"1f1b\"", "schedule = \"gpipe\""), kGpt,
      "cpu:4");
}

TEST(Equivalence, GptFourStagesOnFourDevices) {
  expectEquivalent(edit(source(kGpt), "num_micro_batch = 4",
                        "num_micro_batch = 4\n  auto_parallel = true\n  "
                        "num_task_graph = 4"),
                   kGpt, "cpu:4");
}

TEST(Equivalence, GptAutoParallelTwoTaskGraphs) {
  expectEquivalent(edit(source(kGpt), "num_micro_batch = 4",
                        "num_micro_batch = 4\n  auto_parallel = true\n  "
                        "num_task_graph = 2"),
                   kGpt, "cpu:2");
}

// The interleaved schedule (virtual_stages): each stage holds two model
// chunks, and the micro-batches pass through the stages twice.
TEST(Equivalence, MlpInterleavedTwoChunksOnTwoStages) {
  const char *four = "test/equivalence/mlp_four_stages.whl";
  std::string text = edit(source(four), "schedule = \"1f1b\"",
                          "schedule = \"1f1b\"\n  virtual_stages = 2");
  expectEquivalent(text, four, "cpu:2");
  expectEquivalent(edit(text, "\"1f1b\"", "\"gpipe\""), four, "cpu:2");
  // Two copies of the pipeline, their gradients summed.
  expectEquivalent(text, four, "cpu:4");
}

std::string interleaved(const std::string &text, int taskGraphs) {
  return edit(text, "num_micro_batch = 4",
              "num_micro_batch = 4\n  auto_parallel = true\n  "
              "num_task_graph = " +
                  std::to_string(taskGraphs) + "\n  virtual_stages = 2");
}

TEST(Equivalence, GptInterleavedTwoChunksOnTwoStages) {
  expectEquivalent(interleaved(source(kGpt), 4), kGpt, "cpu:2");
}

// Megatron-LM's layout: stages of tensor-parallel pairs sharing their rows,
// each holding two chunks, over two data-parallel copies.
TEST(Equivalence, GptInterleavedSplitStagesSharingRows) {
  expectEquivalent(edit(interleaved(source(kGpt), 4), "virtual_stages = 2",
                        "virtual_stages = 2\n  task_graph_split = 2\n  "
                        "split_rows = \"whole\""),
                   kGpt, "cpu:8");
}

TEST(Equivalence, GptGradientAccumulationOnOneDevice) {
  expectEquivalent(source(kGpt), kGpt, "cpu:1");
}

// Tensor parallelism (split).

TEST(Equivalence, MlpSplitOverFourDevices) {
  expectEquivalent(source(kMlpSplit), kMlpSplit, "cpu:4");
}

TEST(Equivalence, MlpSplitEachMatmulPatternForced) {
  for (const char *pattern : {"column", "row", "replicated"}) {
    SCOPED_TRACE(pattern);
    expectEquivalent(edit(source(kMlpSplit), "model mlp",
                          std::string("config {\n  split_matmul = \"") +
                              pattern + "\"\n}\n\nmodel mlp"),
                     kMlpSplit, "cpu:4");
  }
}

// silu, an op defined by its formula: split with its input, fused with its
// neighbours, its gradient a whale.formula_grad; data parallel too, and
// unfused (a region of its own) on one device against fused under a plan.
TEST(Equivalence, SwiGluMlpSplitOverFourDevices) {
  expectEquivalent(source(kSwiGluSplit), kSwiGluSplit, "cpu:4");
}
TEST(Equivalence, SwiGluMlpDataParallelOverFourDevices) {
  expectEquivalent(edit(source(kSwiGluSplit), "split {", "replicate {"),
                   kSwiGluSplit, "cpu:4");
}
TEST(Equivalence, SwiGluMlpUnfusedOnOneDeviceAsFusedUnderAPlan) {
  const std::string text = source(kSwiGluSplit);
  whale::TrainResult fused = trainText(text, kSwiGluSplit, "cpu:2");
  whale::TrainResult alone =
      trainText(text, kSwiGluSplit, "", [](whale::TrainOptions &o) {
        o.fuse = false;
      });
  ASSERT_TRUE(fused.ok) << fused.error;
  ASSERT_TRUE(alone.ok) << alone.error;
  ASSERT_EQ(fused.losses.size(), alone.losses.size());
  for (size_t i = 0; i < fused.losses.size(); ++i)
    EXPECT_LT(relative(fused.losses[i], alone.losses[i]), 1e-4)
        << "step " << i + 1;
  EXPECT_LT(fused.losses.back(), fused.losses.front());
}
// Llama's MLP block: RMSNorm (a kernel of the runtime, its weight whole on
// every rank, each row normalized whole), SwiGLU split Megatron's way, the
// residual sum, and the final RMSNorm; then the same data parallel, where
// the norms split with the batch.
TEST(Equivalence, LlamaMlpSplitOverFourDevices) {
  expectEquivalent(source(kLlamaMlpSplit), kLlamaMlpSplit, "cpu:4");
}
TEST(Equivalence, LlamaMlpDataParallelOverFourDevices) {
  expectEquivalent(edit(source(kLlamaMlpSplit), "split {", "replicate {"),
                   kLlamaMlpSplit, "cpu:4");
}
// The stdlib's Llama block (rotary attention too) split over four ranks,
// data parallel over four, and the two as two pairs.
TEST(Equivalence, LlamaBlockSplitOverFourDevices) {
  expectEquivalent(source(kLlamaBlockSplit), kLlamaBlockSplit, "cpu:4");
}
TEST(Equivalence, LlamaBlockDataParallelOverFourDevices) {
  expectEquivalent(edit(source(kLlamaBlockSplit), "split {", "replicate {"),
                   kLlamaBlockSplit, "cpu:4");
}
// Fewer key and value heads than ranks: the query heads split, and each
// rank reads the key head its query heads share, which two ranks (two key
// heads over four) or all four (multi-query) hold; their gradients add.
TEST(Equivalence, LlamaBlockSplitOverMoreRanksThanKeyHeads) {
  expectEquivalent(edit(source(kLlamaBlockSplit), "llama_block(x, 8, 4,",
                        "llama_block(x, 8, 2,"),
                   kLlamaBlockSplit, "cpu:4");
}
TEST(Equivalence, MultiQueryLlamaBlockSplitOverFourDevices) {
  expectEquivalent(edit(source(kLlamaBlockSplit), "llama_block(x, 8, 4,",
                        "llama_block(x, 8, 1,"),
                   kLlamaBlockSplit, "cpu:4");
}
TEST(Equivalence, MlpSplitInGroupsOfTwoWithDataParallelism) {
  expectEquivalent(edit(source(kMlpSplit), "split {", "split(2) {"), kMlpSplit,
                   "cpu:4");
}

TEST(Equivalence, HybridReplicatedFeaturesSplitClassifier) {
  expectEquivalent(source(kHybrid), kHybrid, "cpu:4");
}

TEST(Equivalence, HybridOnTwoDevices) {
  expectEquivalent(source(kHybrid), kHybrid, "cpu:2");
}

// The conv net's hybrid: a replicated convolutional backbone (conv2d with
// its bias, max and average pooling) and a split classifier.
TEST(Equivalence, ConvNetHybridOnTwoDevices) {
  expectEquivalent(source(kCnn), kCnn, "cpu:2");
}

TEST(Equivalence, ConvNetHybridOnFourDevices) {
  expectEquivalent(source(kCnn), kCnn, "cpu:4");
}

TEST(Equivalence, ConvNetDataParallelOverFourDevices) {
  expectEquivalent(edit(source(kCnn), "split {", "replicate {"), kCnn,
                   "cpu:4");
}

TEST(Equivalence, ConvNetTwoStages1F1B) {
  expectEquivalent(
      edit(edit(source(kCnn), "split {", "replicate {"), "model cnn",
           "config {\n  num_micro_batch = 4\n}\n\nmodel cnn"),
      kCnn, "cpu:2");
}

TEST(Equivalence, SplitInsideAPipelineStage) {
  expectEquivalent(source(kSplitStage), kSplitStage, "cpu:4");
}

TEST(Equivalence, SplitInsideAPipelineStageNestedDataParallel) {
  expectEquivalent(source(kSplitStage), kSplitStage, "cpu:8");
}

TEST(Equivalence, GptBlocksSplitOverFourDevices) {
  std::string text =
      edit(source(kGpt), "num_micro_batch = 4", "num_micro_batch = 1");
  text = edit(text, "  replicate {", "  split {");
  text = edit(text, "  replicate {", "  split {");
  expectEquivalent(text, kGpt, "cpu:4");
}

// What whale search proposes: auto_parallel's stages as split TaskGraphs
// (task_graph_split), a pipeline of tensor-parallel stages.
TEST(Equivalence, GptAutoParallelSplitStages) {
  expectEquivalent(edit(source(kGpt), "num_micro_batch = 4",
                        "num_micro_batch = 4\n  auto_parallel = true\n  "
                        "num_task_graph = 2\n  task_graph_split = 2"),
                   kGpt, "cpu:4");
}

TEST(Equivalence, GptAutoParallelSplitWithDataParallelism) {
  expectEquivalent(edit(source(kGpt), "num_micro_batch = 4",
                        "num_micro_batch = 1\n  auto_parallel = true\n  "
                        "num_task_graph = 1\n  task_graph_split = 2"),
                   kGpt, "cpu:4");
}

// Convolutions under split: each rank's own images (rows), and with the
// rows shared, the output channels split and a depthwise convolution's
// channel groups (cnn_split.whl).
TEST(Equivalence, ConvNetSplitOverFourDevices) {
  expectEquivalent(source(kCnnSplit), kCnnSplit, "cpu:4");
}

TEST(Equivalence, ConvNetSplitChannelsAndGroupsSharingRows) {
  expectEquivalent(edit(source(kCnnSplit), "model cnn",
                        "config {\n  split_rows = \"whole\"\n}\n\nmodel cnn"),
                   kCnnSplit, "cpu:4");
}

// Shard groups that share their rows (split_rows = "whole", Megatron-LM's
// layout): every rank of a group reads the same rows, the groups split
// the batch among them.
std::string sharingRows(const std::string &text, const std::string &before) {
  return edit(text, before, "config {\n  split_rows = \"whole\"\n}\n\n" + before);
}

TEST(Equivalence, MlpSplitSharingRowsInGroupsOfTwo) {
  expectEquivalent(
      sharingRows(edit(source(kMlpSplit), "split {", "split(2) {"), "model mlp"),
      kMlpSplit, "cpu:4");
}

// The replicated features run whole on both ranks of a group; their
// gradients are summed over the groups only.
TEST(Equivalence, HybridSharingRows) {
  expectEquivalent(
      sharingRows(edit(source(kHybrid), "split {", "split(2) {"),
                  "model classify"),
      kHybrid, "cpu:4");
}

// On devices of different speeds the group's ranks share its rows and cut
// the split dimensions unevenly (weights 17:17:8:8 here, plan-whole-rows.test
// checks them): the same numbers.
TEST(Equivalence, HybridSharingRowsOnUnequalDevices) {
  expectEquivalent(sharingRows(source(kHybrid), "model classify"), kHybrid,
                   "cpu:2@flops=2e10,cpu:2@flops=1e10");
}

// A pipeline: a replicated stage (its ranks sharing rows by pairs too), a
// split stage, two copies; gradient clipping over both stages.
TEST(Equivalence, SplitStageSharingRowsNestedDataParallel) {
  expectEquivalent(edit(source(kSplitStage), "num_micro_batch = 2",
                        "num_micro_batch = 2\n  split_rows = \"whole\""),
                   kSplitStage, "cpu:8");
}

// PTD-P as Megatron-LM runs it: two pipeline stages of tensor-parallel
// pairs, two data-parallel copies.
TEST(Equivalence, GptPipelineOfSplitStagesSharingRows) {
  expectEquivalent(edit(source(kGpt), "num_micro_batch = 4",
                        "num_micro_batch = 4\n  auto_parallel = true\n  "
                        "num_task_graph = 2\n  task_graph_split = 2\n  "
                        "split_rows = \"whole\""),
                   kGpt, "cpu:8");
}

// Eight micro-batches: each stage's program calls its forward and backward
// steps (the last backward stands inline), which the runtime's lowering
// inlines. Against one device of four micro-batches, unrolled.
std::string eightMicroBatches(const std::string &text,
                              const std::string &more = "") {
  return edit(text, "num_micro_batch = 4", "num_micro_batch = 8" + more);
}

TEST(Equivalence, GptStagesCallingTheirSteps) {
  std::string keep = source(kGpt);
  expectEquivalent(eightMicroBatches(keep), kGpt, "cpu:2", nullptr, &keep);
  expectEquivalent(edit(eightMicroBatches(keep), "schedule = \"1f1b\"",
                        "schedule = \"gpipe\""),
                   kGpt, "cpu:4", nullptr, &keep);
}

TEST(Equivalence, GptSplitStagesCallingTheirSteps) {
  std::string keep = source(kGpt);
  expectEquivalent(eightMicroBatches(keep, "\n  auto_parallel = true\n  "
                                           "num_task_graph = 2\n  "
                                           "task_graph_split = 2\n  "
                                           "split_rows = \"whole\""),
                   kGpt, "cpu:4", nullptr, &keep);
}

TEST(Equivalence, GptRecomputeCallingTheirSteps) {
  std::string keep = source(kGpt);
  expectEquivalent(eightMicroBatches(keep, "\n  recompute = true"), kGpt,
                   "cpu:2", nullptr, &keep);
}

// Interleaved, each chunk's steps are functions of their own; a chunk's
// forward takes what the rank's earlier chunks made or received, and its
// backward gives those their gradients, summed over the chunks.
TEST(Equivalence, GptInterleavedCallingTheirSteps) {
  std::string keep = source(kGpt);
  std::string text = eightMicroBatches(interleaved(keep, 4));
  expectEquivalent(text, kGpt, "cpu:2", nullptr, &keep);
  expectEquivalent(edit(text, "virtual_stages = 2",
                        "virtual_stages = 2\n  recompute = true"),
                   kGpt, "cpu:2", nullptr, &keep);
}

// Chunks that read their own rank's earlier chunks (a skip over a stage):
// the values pass from call to call, their gradients back summed.
TEST(Equivalence, MlpInterleavedChunksReadingEarlierChunks) {
  const char *skip = "test/equivalence/mlp_skip_chunks.whl";
  std::string text = source(skip);
  std::string local = edit(edit(text, "virtual_stages = 2", ""),
                           "num_micro_batch = 8", "num_micro_batch = 4");
  expectEquivalent(text, skip, "cpu:2", nullptr, &local);
  expectEquivalent(edit(text, "\"1f1b\"", "\"gpipe\""), skip, "cpu:4", nullptr,
                   &local);
}

TEST(Equivalence, GptInterleavedSplitStagesCallingTheirSteps) {
  std::string keep = source(kGpt);
  expectEquivalent(edit(eightMicroBatches(interleaved(keep, 4)),
                        "virtual_stages = 2",
                        "virtual_stages = 2\n  task_graph_split = 2\n  "
                        "split_rows = \"whole\""),
                   kGpt, "cpu:8", nullptr, &keep);
}

// Activation recomputation runs the forward again for the backward: the
// same numbers as one device that keeps every activation.
std::string withRecompute(const std::string &text) {
  return edit(text, "num_micro_batch = 4",
              "num_micro_batch = 4\n  recompute = true");
}

TEST(Equivalence, GptRecomputeOnOneDevice) {
  std::string keep = source(kGpt);
  expectEquivalent(withRecompute(keep), kGpt, "cpu:1", nullptr, &keep);
}

TEST(Equivalence, GptRecomputeTwoStages1F1B) {
  std::string keep = source(kGpt);
  expectEquivalent(withRecompute(keep), kGpt, "cpu:2", nullptr, &keep);
}

TEST(Equivalence, GptRecomputeInterleaved) {
  std::string keep = source(kGpt);
  expectEquivalent(interleaved(withRecompute(keep), 4), kGpt, "cpu:2", nullptr,
                   &keep);
}

TEST(Equivalence, GptRecomputeSplitStagesWithDataParallelism) {
  std::string keep = source(kGpt);
  std::string text = edit(withRecompute(keep), "recompute = true",
                          "recompute = true\n  auto_parallel = true\n  "
                          "num_task_graph = 2\n  task_graph_split = 2");
  expectEquivalent(text, kGpt, "cpu:8", nullptr, &keep);
}

// Mixtures of experts: every sequence routes its tokens alone (its own
// slots), so plans that cut the batch keep and drop the same choices as
// one device; experts split over a group receive their slots by
// all-to-all and send the outputs back the same way.
std::string withConfig(const std::string &text, const std::string &settings) {
  return edit(text, "model moe_gpt",
              "config {\n" + settings + "}\n\nmodel moe_gpt");
}

TEST(Equivalence, MoeGptExpertParallelOnTwoDevices) {
  expectEquivalent(source(kMoeGpt), kMoeGpt, "cpu:2");
}

TEST(Equivalence, MoeGptOneExpertPerDevice) {
  expectEquivalent(source(kMoeGpt), kMoeGpt, "cpu:4");
}

// Half the slots the choices need: at least 24 of each sequence's 64
// choices drop, the same ones on every plan.
TEST(Equivalence, MoeGptDroppingTokensOneExpertPerDevice) {
  expectEquivalent(edit(source(kMoeGpt), "CAPACITY = 1.25", "CAPACITY = 0.5"),
                   kMoeGpt, "cpu:4");
}

// Devices of rates 3:1: the faster keeps 3 of the 4 experts of each layer
// and routes 12 of the 16 sequences; the all-to-alls carry parts of 3:1.
TEST(Equivalence, MoeGptExpertsOnUnequalDevices) {
  expectEquivalent(source(kMoeGpt), kMoeGpt,
                   "cpu:1@flops=3e10,cpu:1@flops=1e10");
}

TEST(Equivalence, MoeGptExpertParallelWithDataParallelism) {
  expectEquivalent(edit(source(kMoeGpt), "split {", "split(2) {"), kMoeGpt,
                   "cpu:4");
}

TEST(Equivalence, MoeGptReplicatedExpertsDataParallel) {
  expectEquivalent(edit(source(kMoeGpt), "split {", "replicate {"), kMoeGpt,
                   "cpu:4");
}

TEST(Equivalence, MoeGptExpertsSharingRows) {
  expectEquivalent(withConfig(source(kMoeGpt), "  split_rows = \"whole\"\n"),
                   kMoeGpt, "cpu:4");
}

// Two pipeline stages, each split over groups of two (experts, attention
// heads and the head's classes), with data parallelism over the groups.
TEST(Equivalence, MoeGptPipelineOfExpertParallelStages) {
  expectEquivalent(withConfig(source(kMoeGpt),
                              "  auto_parallel = true\n  num_task_graph = 2\n"
                              "  task_graph_split = 2\n  num_micro_batch = 2\n"),
                   kMoeGpt, "cpu:8");
}

// Dropout draws by each element's place in the global batch: every plan
// drops what one device drops (the embeddings' sum and the head's input).
std::string withDropout(const std::string &text) {
  std::string t = edit(text, "x = nn.embed(tokens, VOCAB, D) + positions",
                       "x = dropout(nn.embed(tokens, VOCAB, D) + positions, "
                       "0.2)");
  return edit(t, "logits = nn.linear(nn.norm(x), VOCAB)",
              "logits = nn.linear(dropout(nn.norm(x), 0.3), VOCAB)");
}

TEST(Equivalence, GptDropoutDataParallel) {
  expectEquivalent(withDropout(edit(source(kGpt), "num_micro_batch = 4",
                                    "num_micro_batch = 1")),
                   kGpt, "cpu:4");
}

TEST(Equivalence, GptDropoutGradientAccumulationAndPipeline) {
  expectEquivalent(withDropout(source(kGpt)), kGpt, "cpu:1");
  expectEquivalent(withDropout(source(kGpt)), kGpt, "cpu:4");
}

// Eight micro-batches call their steps, the calls saying where each
// micro-batch's rows start: the draws are one device's of four unrolled.
TEST(Equivalence, GptDropoutCallingTheirSteps) {
  std::string keep = withDropout(source(kGpt));
  expectEquivalent(eightMicroBatches(keep), kGpt, "cpu:2", nullptr, &keep);
  expectEquivalent(eightMicroBatches(interleaved(keep, 4)), kGpt, "cpu:2",
                   nullptr, &keep);
}

TEST(Equivalence, GptDropoutSplitBlocks) {
  std::string text = withDropout(
      edit(source(kGpt), "num_micro_batch = 4", "num_micro_batch = 1"));
  text = edit(text, "  replicate {", "  split {");
  text = edit(text, "  replicate {", "  split {");
  expectEquivalent(text, kGpt, "cpu:4");
}

TEST(Equivalence, GptDropoutPipelineOfSplitStagesSharingRows) {
  expectEquivalent(withDropout(edit(source(kGpt), "num_micro_batch = 4",
                                    "num_micro_batch = 4\n  auto_parallel = "
                                    "true\n  num_task_graph = 2\n  "
                                    "task_graph_split = 2\n  split_rows = "
                                    "\"whole\"")),
                   kGpt, "cpu:8");
}

// Batch normalization normalizes over the whole global batch on every plan:
// the replicas add their channel sums, so each plan's statistics, outputs,
// gradients and running statistics (compared as the state they are) are
// one device's.
// (A bias before it would take a gradient of zero, which Adam turns into
// steps of rounding noise: the convolutions have none, as ResNet's.)
std::string withBatchNorm(const std::string &text) {
  std::string t = edit(text, "relu(nn.conv(x, 16, 3, 1, 1))",
                       "relu(nn.conv_bn(x, 16, 3, 1, 1))");
  return edit(t, "relu(nn.conv(h, 32, 3, 1, 1))",
              "relu(nn.conv_bn(h, 32, 3, 1, 1))");
}

TEST(Equivalence, ConvNetBatchNormHybridOnTwoDevices) {
  whale::TrainResult planned;
  expectEquivalent(withBatchNorm(source(kCnn)), kCnn, "cpu:2", &planned);
  int running = 0;
  for (const auto &[name, values] : planned.parameters)
    running += name.find("running_") != std::string::npos;
  EXPECT_EQ(running, 4); // two layers' running mean and variance
}

TEST(Equivalence, ConvNetBatchNormDataParallelOverFourDevices) {
  expectEquivalent(
      withBatchNorm(edit(source(kCnn), "split {", "replicate {")), kCnn,
      "cpu:4");
}

// Shares of 24 and 8 rows: the sums and counts add whatever the shares.
TEST(Equivalence, ConvNetBatchNormOnUnequalDevices) {
  expectEquivalent(withBatchNorm(source(kCnn)), kCnn,
                   "cpu:1@flops=3e10,cpu:1@flops=1e10");
}

// Ranks of a shard group share their rows: each adds the same sums and the
// same count, so the ratios are the rows' own.
TEST(Equivalence, ConvNetBatchNormHybridSharingRows) {
  expectEquivalent(
      sharingRows(edit(withBatchNorm(source(kCnn)), "split {", "split(2) {"),
                  "model cnn"),
      kCnn, "cpu:4");
}

// Recomputation runs each normalization's forward again in the backward:
// the same statistics (all-reduced again), and the running statistics
// moved once a step, not twice (the copy has momentum 0): the same
// parameters and running statistics as the plan without it on one device.
TEST(Equivalence, ConvNetBatchNormRecomputedMovesRunningStatisticsOnce) {
  std::string plain = withBatchNorm(source(kCnn));
  std::string recomputed =
      edit(plain, "model cnn", "config {\n  recompute = true\n}\n\nmodel cnn");
  expectEquivalent(recomputed, kCnn, "cpu:2", nullptr, &plain);
}

TEST(Equivalence, BatchNormInMicroBatchesIsRejected) {
  whale::Interpreter interp;
  ASSERT_TRUE(interp.loadString(
      edit(withBatchNorm(source(kCnn)), "model cnn",
           "config {\n  num_micro_batch = 4\n}\n\nmodel cnn"),
      kCnn));
  whale::TrainOptions opts;
  opts.cluster = "cpu:2";
  opts.steps = 1;
  whale::TrainResult r = whale::train(interp, opts);
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("normalizes over the whole batch, so its stage "
                         "cannot run in micro-batches (this plan has 4)"),
            std::string::npos)
      << r.error;
}

TEST(Equivalence, ABatchTheMicroBatchesCannotDivideIsRejected) {
  whale::Interpreter interp;
  ASSERT_TRUE(interp.loadString(
      edit(source(kMlpStages), "num_micro_batch = 4", "num_micro_batch = 8"),
      kMlpStages));
  whale::TrainOptions opts;
  opts.cluster = "cpu:32";
  opts.steps = 1;
  whale::TrainResult r = whale::train(interp, opts);
  ASSERT_FALSE(r.ok);
  // Balanced by hardware, replicas may hold unequal shares, but each
  // needs a sample in each of its micro-batches.
  EXPECT_NE(r.error.find("the global batch of 64 is too small for 16 "
                         "replicas x 8 micro-batches: each replica needs a "
                         "sample in each micro-batch; use a batch of at "
                         "least 128"),
            std::string::npos)
      << r.error;
}

} // namespace

// Gradient all-reduces started during backward (small buckets, so many
// start early) sum the same tensors in the same order as those run after
// it: the same bits, and the local model's numbers.
TEST(Equivalence, OverlappedGradientSyncIsTheSyncAfterBackward) {
  for (const char *cluster : {"cpu:4", "cpu:2"}) {
    // Data parallel with 2 micro-batches over 4; two stages over 2.
    std::string text =
        std::string(cluster) == "cpu:4"
            ? edit(source(kGpt), "num_micro_batch = 4",
                   "num_micro_batch = 2\n  auto_parallel = true\n  "
                   "num_task_graph = 1\n  bucket_bytes = 65536")
            : edit(source(kGpt), "num_micro_batch = 4",
                   "num_micro_batch = 4\n  bucket_bytes = 65536");
    expectEquivalent(text, kGpt, cluster);
    whale::TrainResult overlapped = trainText(text, kGpt, cluster);
    whale::TrainResult after = trainText(
        text, kGpt, cluster, [](whale::TrainOptions &o) { o.overlap = false; });
    ASSERT_TRUE(overlapped.ok) << overlapped.error;
    ASSERT_TRUE(after.ok) << after.error;
    EXPECT_EQ(overlapped.losses, after.losses) << cluster;
    EXPECT_EQ(overlapped.parameters, after.parameters) << cluster;
  }
}

// ZeRO stage 3: each parameter kept by the owner of its update alone,
// gathered by every replica before each layer's forward and backward. The
// gathered values are the owner's bits and the gradients are summed as
// under stage 1, so the run is stage 1's and plain data parallelism's bit
// for bit, and the local model's numbers: data parallel (a micro-batch
// each, and accumulating four), a pipeline of replicated stages, split
// groups (parts owned among their shard peers), a replicated and a split
// stage with clipping, and a Llama data parallel.
TEST(Equivalence, ShardedParametersAreTheReplicatedOnes) {
  struct Case {
    const char *script;
    std::string text;
    const char *cluster;
  };
  const std::string withConfig = "config {\n  shard_parameters = true\n}\n\n";
  for (const Case &c :
       {Case{kGpt,
             edit(source(kGpt), "num_micro_batch = 4",
                  "num_micro_batch = 1\n  auto_parallel = true\n  "
                  "num_task_graph = 1\n  shard_parameters = true"),
             "cpu:4"},
        Case{kGpt,
             edit(source(kGpt), "num_micro_batch = 4",
                  "num_micro_batch = 4\n  auto_parallel = true\n  "
                  "num_task_graph = 1\n  shard_parameters = true"),
             "cpu:2"},
        Case{kGpt,
             edit(source(kGpt), "num_micro_batch = 4",
                  "num_micro_batch = 4\n  shard_parameters = true"),
             "cpu:4"},
        Case{kMlpSplit,
             edit(edit(source(kMlpSplit), "split {", "split(2) {"), "model mlp",
                  withConfig + "model mlp"),
             "cpu:4"},
        Case{kSplitStage,
             edit(source(kSplitStage), "num_micro_batch = 2",
                  "num_micro_batch = 2\n  shard_parameters = true"),
             "cpu:8"},
        Case{kLlamaBlockSplit,
             edit(edit(source(kLlamaBlockSplit), "split {", "replicate {"),
                  "model llama", withConfig + "model llama"),
             "cpu:4"}}) {
    SCOPED_TRACE(std::string(c.script) + " on " + c.cluster);
    expectEquivalent(c.text, c.script, c.cluster);
    const std::string plainText =
        edit(c.text, "shard_parameters = true", "shard_parameters = false");
    const std::string stage1Text =
        edit(c.text, "shard_parameters = true", "shard_optimizer = true");
    whale::TrainResult sharded = trainText(c.text, c.script, c.cluster);
    whale::TrainResult plain = trainText(plainText, c.script, c.cluster);
    whale::TrainResult stage1 = trainText(stage1Text, c.script, c.cluster);
    ASSERT_TRUE(sharded.ok) << sharded.error;
    ASSERT_TRUE(plain.ok) << plain.error;
    ASSERT_TRUE(stage1.ok) << stage1.error;
    EXPECT_EQ(sharded.losses, plain.losses);
    EXPECT_EQ(sharded.parameters, plain.parameters);
    EXPECT_EQ(sharded.losses, stage1.losses);
    EXPECT_EQ(sharded.parameters, stage1.parameters);
    ASSERT_EQ(sharded.peakMemory.size(), plain.peakMemory.size());
    for (size_t r = 0; r < plain.peakMemory.size(); ++r)
      std::printf("rank %zu: peak %lld bytes stage 3, %lld stage 1, %lld "
                  "replicated\n",
                  r, static_cast<long long>(sharded.peakMemory[r]),
                  static_cast<long long>(stage1.peakMemory[r]),
                  static_cast<long long>(plain.peakMemory[r]));
  }
}

// ZeRO stage 2 while micro-batches accumulate: each micro-batch's
// gradients reduced to their owners, which alone add them up. The local
// model's numbers (the sums are added in another order than stage 1's), on
// every rank less memory than stage 1: data parallel over 4 accumulating 4,
// a pipeline of replicated stages with clipping (also with the parameters
// sharded), split groups of two accumulating 2 (parts owned among the
// shard peers), a replicated and a split stage with clipping; each the
// bits of the same plan with its reductions not overlapped.
TEST(Equivalence, ShardedGradientsTrainLikeOneDevice) {
  struct Case {
    const char *script;
    std::string text;
    const char *cluster;
  };
  const std::string withConfig = "config {\n  shard_gradients = true\n  "
                                 "num_micro_batch = 2\n}\n\n";
  for (const Case &c :
       {Case{kGpt,
             edit(source(kGpt), "num_micro_batch = 4",
                  "num_micro_batch = 4\n  auto_parallel = true\n  "
                  "num_task_graph = 1\n  shard_gradients = true"),
             "cpu:4"},
        Case{kGpt,
             edit(source(kGpt), "num_micro_batch = 4",
                  "num_micro_batch = 4\n  shard_gradients = true"),
             "cpu:4"},
        Case{kGpt,
             edit(source(kGpt), "num_micro_batch = 4",
                  "num_micro_batch = 4\n  shard_gradients = true\n  "
                  "shard_parameters = true"),
             "cpu:4"},
        Case{kMlpSplit,
             edit(edit(source(kMlpSplit), "split {", "split(2) {"), "model mlp",
                  withConfig + "model mlp"),
             "cpu:4"},
        Case{kSplitStage,
             edit(source(kSplitStage), "num_micro_batch = 2",
                  "num_micro_batch = 2\n  shard_gradients = true"),
             "cpu:8"}}) {
    SCOPED_TRACE(std::string(c.script) + " on " + c.cluster);
    expectEquivalent(c.text, c.script, c.cluster);
    whale::TrainResult sharded = trainText(c.text, c.script, c.cluster);
    whale::TrainResult stage1 = trainText(
        edit(c.text, "shard_gradients = true", "shard_optimizer = true"),
        c.script, c.cluster);
    // Each reduction overlapped with the next micro-batch's work, or
    // waited for where it starts: the same sums in the same order.
    whale::TrainResult blocking = trainText(
        edit(c.text, "shard_gradients = true",
             "shard_gradients = true\n  grad_sync = \"after_backward\""),
        c.script, c.cluster);
    ASSERT_TRUE(sharded.ok) << sharded.error;
    ASSERT_TRUE(stage1.ok) << stage1.error;
    ASSERT_TRUE(blocking.ok) << blocking.error;
    EXPECT_EQ(sharded.losses, blocking.losses);
    EXPECT_EQ(sharded.parameters, blocking.parameters);
    ASSERT_EQ(sharded.peakMemory.size(), stage1.peakMemory.size());
    for (size_t r = 0; r < stage1.peakMemory.size(); ++r) {
      EXPECT_LE(sharded.peakMemory[r], stage1.peakMemory[r]) << "rank " << r;
      std::printf("rank %zu: peak %lld bytes stage 2, %lld stage 1\n", r,
                  static_cast<long long>(sharded.peakMemory[r]),
                  static_cast<long long>(stage1.peakMemory[r]));
    }
  }
}

// Stage 3 with each layer gathered once a step and kept (gather_every =
// "step") instead of before each micro-batch's forward and backward: the
// same sums, the same bits; data parallel over 4 accumulating 4 (also with
// stage 2), a pipeline of replicated stages, split groups whose parts are
// owned among their shard peers. Fewer gathers, more memory.
TEST(Equivalence, ParametersKeptForTheStepGiveTheSameBits) {
  struct Case {
    const char *script;
    std::string text;
    const char *cluster;
  };
  const std::string dp = "num_micro_batch = 4\n  auto_parallel = true\n  "
                         "num_task_graph = 1\n  shard_parameters = true";
  for (const Case &c :
       {Case{kGpt, edit(source(kGpt), "num_micro_batch = 4", dp), "cpu:4"},
        Case{kGpt,
             edit(source(kGpt), "num_micro_batch = 4",
                  dp + "\n  shard_gradients = true"),
             "cpu:4"},
        Case{kGpt,
             edit(source(kGpt), "num_micro_batch = 4",
                  "num_micro_batch = 4\n  shard_parameters = true"),
             "cpu:4"},
        Case{kMlpSplit,
             edit(edit(source(kMlpSplit), "split {", "split(2) {"), "model mlp",
                  "config {\n  shard_parameters = true\n  num_micro_batch = "
                  "2\n}\n\nmodel mlp"),
             "cpu:4"}}) {
    SCOPED_TRACE(std::string(c.script) + " on " + c.cluster);
    const std::string kept =
        edit(c.text, "shard_parameters = true",
             "shard_parameters = true\n  gather_every = \"step\"");
    const std::string each =
        edit(c.text, "shard_parameters = true",
             "shard_parameters = true\n  gather_every = \"micro_batch\"");
    whale::TrainResult a = trainText(kept, c.script, c.cluster);
    whale::TrainResult b = trainText(each, c.script, c.cluster);
    ASSERT_TRUE(a.ok) << a.error;
    ASSERT_TRUE(b.ok) << b.error;
    EXPECT_EQ(a.losses, b.losses);
    EXPECT_EQ(a.parameters, b.parameters);
    for (size_t r = 0; r < a.peakMemory.size(); ++r)
      std::printf("rank %zu: peak %lld bytes kept for the step, %lld "
                  "gathered per micro-batch\n",
                  r, static_cast<long long>(a.peakMemory[r]),
                  static_cast<long long>(b.peakMemory[r]));
  }
}

// Stage 3 under amp: the parameters only products read (amp rounds their
// operands to bf16; with bf16 storage, through a cast that only products
// read) are gathered in bf16, half the bytes, and the products read the
// same bits: the same losses and parameters as whole parameters under amp,
// with activations in f32 and in bf16, accumulating or not; each rank
// moves fewer bytes than the same plan in fp32.
TEST(Equivalence, ParametersGatheredInBf16UnderAmpGiveTheSameBits) {
  for (bool storage : {false, true})
    for (const char *m : {"1", "4"}) {
      SCOPED_TRACE(std::string(storage ? "bf16 storage" : "f32 storage") +
                   ", micro-batches " + m);
      const std::string whole =
          edit(source(kGpt), "num_micro_batch = 4",
               std::string("num_micro_batch = ") + m +
                   "\n  auto_parallel = true\n  num_task_graph = 1\n  "
                   "amp = \"bf16\"");
      const std::string sharded = edit(whole, "amp = \"bf16\"",
                                       "amp = \"bf16\"\n  shard_parameters "
                                       "= true");
      auto amp = [&](whale::TrainOptions &o) { o.ampStorage = storage; };
      whale::TrainResult a = trainText(sharded, kGpt, "cpu:4", amp);
      whale::TrainResult b = trainText(whole, kGpt, "cpu:4", amp);
      whale::TrainResult f32 = trainText(
          edit(sharded, "amp = \"bf16\"", "amp = \"off\""), kGpt, "cpu:4");
      ASSERT_TRUE(a.ok) << a.error;
      ASSERT_TRUE(b.ok) << b.error;
      ASSERT_TRUE(f32.ok) << f32.error;
      EXPECT_EQ(a.losses, b.losses);
      EXPECT_EQ(a.parameters, b.parameters);
      ASSERT_EQ(a.commBytes.size(), f32.commBytes.size());
      for (size_t r = 0; r < a.commBytes.size(); ++r) {
        EXPECT_LT(a.commBytes[r], f32.commBytes[r]) << "rank " << r;
        std::printf("rank %zu: %lld bytes sent under amp, %lld in f32\n", r,
                    static_cast<long long>(a.commBytes[r]),
                    static_cast<long long>(f32.commBytes[r]));
      }
    }
}

// Hybrid sharding (shard_group): the replicas shard in groups and each
// group holds a copy of the others' shards; every gradient is summed within
// its sharding group to its owner, then over the owner's copies. Stages 1,
// 2 and 3 in groups of 2 of gpt.whl's 4 replicas, stage 3 in groups of 4
// of 8 split replicas (two shard peers a group), a pipeline of a replicated
// and a split stage with clipping, and groups of one (every bucket summed
// over the copies alone): the local model's numbers, and with the
// reductions overlapped the bits of the same plan waited for after the
// backward.
TEST(Equivalence, HybridShardingTrainsLikeOneDevice) {
  struct Case {
    const char *script;
    std::string text;
    const char *cluster;
  };
  const std::string dp = "num_micro_batch = 4\n  auto_parallel = true\n  "
                         "num_task_graph = 1\n  ";
  for (const Case &c :
       {Case{kGpt,
             edit(source(kGpt), "num_micro_batch = 4",
                  dp + "shard_optimizer = true\n  shard_group = 2"),
             "cpu:4"},
        Case{kGpt,
             edit(source(kGpt), "num_micro_batch = 4",
                  dp + "shard_gradients = true\n  shard_group = 2"),
             "cpu:4"},
        Case{kGpt,
             edit(source(kGpt), "num_micro_batch = 4",
                  dp + "shard_parameters = true\n  shard_group = 2"),
             "cpu:4"},
        Case{kGpt,
             edit(source(kGpt), "num_micro_batch = 4",
                  dp + "shard_parameters = true\n  shard_group = 1"),
             "cpu:4"},
        Case{kMlpSplit,
             edit(edit(source(kMlpSplit), "split {", "split(2) {"), "model mlp",
                  "config {\n  shard_parameters = true\n  shard_group = "
                  "4\n}\n\nmodel mlp"),
             "cpu:8"},
        Case{kSplitStage,
             edit(source(kSplitStage), "num_micro_batch = 2",
                  "num_micro_batch = 2\n  shard_gradients = true\n  "
                  "shard_group = 2"),
             "cpu:8"}}) {
    SCOPED_TRACE(std::string(c.script) + " on " + c.cluster + ":\n" +
                 c.text.substr(0, 400));
    expectEquivalent(c.text, c.script, c.cluster);
    whale::TrainResult hybrid = trainText(c.text, c.script, c.cluster);
    whale::TrainResult blocking =
        trainText(edit(c.text, "shard_group",
                       "grad_sync = \"after_backward\"\n  "
                       "shard_group"),
                  c.script, c.cluster);
    ASSERT_TRUE(hybrid.ok) << hybrid.error;
    ASSERT_TRUE(blocking.ok) << blocking.error;
    EXPECT_EQ(hybrid.losses, blocking.losses);
    EXPECT_EQ(hybrid.parameters, blocking.parameters);
  }
}

// A shard_group that does not divide the replicas (or a split parameter's
// shards) is refused when the plan is made, naming the setting.
TEST(Equivalence, ShardGroupsThatDoNotFitAreRefused) {
  for (auto [text, script, cluster] :
       {std::tuple{edit(source(kGpt), "num_micro_batch = 4",
                        "num_micro_batch = 4\n  auto_parallel = true\n  "
                        "num_task_graph = 1\n  shard_parameters = true\n  "
                        "shard_group = 3"),
                   kGpt, "cpu:4"},
        std::tuple{edit(edit(source(kMlpSplit), "split {", "split(4) {"),
                        "model mlp",
                        "config {\n  shard_optimizer = true\n  shard_group = "
                        "2\n}\n\nmodel mlp"),
                   kMlpSplit, "cpu:8"}}) {
    whale::TrainResult r = trainText(text, script, cluster);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("shard_group"), std::string::npos) << r.error;
  }
}

// Stage 3 with recomputation (each segment's forward gathers its layers
// again in the backward), an interleaved pipeline of replicated stages and
// bf16 amp: the bits of the same plan with whole parameters.
TEST(Equivalence, ShardedParametersUnderRecomputeInterleavingAndAmp) {
  for (const std::string &config :
       {std::string("recompute = true"),
        std::string("auto_parallel = true\n  num_task_graph = 4\n  "
                    "virtual_stages = 2"),
        std::string("amp = \"bf16\"")}) {
    SCOPED_TRACE(config);
    const std::string whole = edit(source(kGpt), "num_micro_batch = 4",
                                   "num_micro_batch = 4\n  " + config);
    const std::string sharded =
        edit(whole, "num_micro_batch = 4",
             "num_micro_batch = 4\n  shard_parameters = true");
    whale::TrainResult a = trainText(sharded, kGpt, "cpu:4");
    whale::TrainResult b = trainText(whole, kGpt, "cpu:4");
    ASSERT_TRUE(a.ok) << a.error;
    ASSERT_TRUE(b.ok) << b.error;
    EXPECT_EQ(a.losses, b.losses);
    EXPECT_EQ(a.parameters, b.parameters);
  }
}

// Stage 3 with two or all four of gpt.whl's blocks gathered as one unit
// (gather_layers): fewer, larger gathers, the same bits.
TEST(Equivalence, LayersGatheredTogetherGiveTheSameBits) {
  const std::string sharded =
      edit(source(kGpt), "num_micro_batch = 4",
           "num_micro_batch = 4\n  shard_parameters = true");
  whale::TrainResult one = trainText(sharded, kGpt, "cpu:4");
  ASSERT_TRUE(one.ok) << one.error;
  for (const char *k : {"2", "4"}) {
    SCOPED_TRACE(std::string("gather_layers = ") + k);
    whale::TrainResult grouped = trainText(
        edit(sharded, "shard_parameters = true",
             std::string("shard_parameters = true\n  gather_layers = ") + k),
        kGpt, "cpu:4");
    ASSERT_TRUE(grouped.ok) << grouped.error;
    EXPECT_EQ(grouped.losses, one.losses);
    EXPECT_EQ(grouped.parameters, one.parameters);
  }
}

// ZeRO stage 1: each parameter's update taken by one owner among the
// replicas that sum its gradient, which alone keeps its optimizer state,
// then broadcast. The same bits as every replica updating, the local
// model's numbers, and less memory on every rank.
TEST(Equivalence, ShardedOptimizerStateIsTheReplicatedOne) {
  struct Case {
    const char *script;
    std::string text;
    const char *cluster;
  };
  const std::string withConfig = "config {\n  shard_optimizer = true\n}\n\n";
  for (const Case &c : {
           // Data parallel over 4 (Adam: two moments per parameter).
           Case{kGpt,
                edit(source(kGpt), "num_micro_batch = 4",
                     "num_micro_batch = 1\n  auto_parallel = true\n  "
                     "num_task_graph = 1\n  shard_optimizer = true"),
                "cpu:4"},
           // Two stages, two replicas each.
           Case{kGpt,
                edit(source(kGpt), "num_micro_batch = 4",
                     "num_micro_batch = 4\n  shard_optimizer = true"),
                "cpu:4"},
           // Split in groups of two: parts owned among their shard peers.
           Case{kMlpSplit,
                edit(edit(source(kMlpSplit), "split {", "split(2) {"),
                     "model mlp", withConfig + "model mlp"),
                "cpu:4"},
           // A replicated stage and a split one, each over replicas, with
           // the gradients clipped: whole gradients reduced to owners among
           // the replicas, parts among their shard peers, and the norm
           // counted on the owners.
           Case{kSplitStage,
                edit(source(kSplitStage), "num_micro_batch = 2",
                     "num_micro_batch = 2\n  shard_optimizer = true"),
                "cpu:8"}}) {
    SCOPED_TRACE(std::string(c.script) + " on " + c.cluster);
    expectEquivalent(c.text, c.script, c.cluster);
    const std::string plainText =
        edit(c.text, "shard_optimizer = true", "shard_optimizer = false");
    whale::TrainResult sharded = trainText(c.text, c.script, c.cluster);
    whale::TrainResult plain = trainText(plainText, c.script, c.cluster);
    ASSERT_TRUE(sharded.ok) << sharded.error;
    ASSERT_TRUE(plain.ok) << plain.error;
    EXPECT_EQ(sharded.losses, plain.losses);
    EXPECT_EQ(sharded.parameters, plain.parameters);
    ASSERT_EQ(sharded.peakMemory.size(), plain.peakMemory.size());
    for (size_t r = 0; r < plain.peakMemory.size(); ++r) {
      EXPECT_LT(sharded.peakMemory[r], plain.peakMemory[r]) << "rank " << r;
      std::printf("rank %zu: peak %lld bytes sharded, %lld replicated\n", r,
                  static_cast<long long>(sharded.peakMemory[r]),
                  static_cast<long long>(plain.peakMemory[r]));
    }
  }
}
