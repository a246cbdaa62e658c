//===- AmpEquivalenceTest.cpp - plans under amp's storage
//------------------===//
//
// amp's contract across plans: a model trained with bf16 activations
// (amp = "bf16" and TrainOptions::ampStorage) under a plan trains as it does
// on one device so. The same ops round the same values on both sides, but
// not to the same bits: a plan sums some fp32 values in another order (a
// replica's rows, a micro-batch's gradient, a fused chain), and a value
// that lands within an fp32 ulp of a bf16 rounding boundary then rounds to
// the neighbouring bf16 value, 2^-8 away. So the losses keep fp32's
// tolerance (relative 1e-4 after 5 steps), and the parameters are held to
// 2e-3 of their scale, half of bf16's step: measured 2026-11-29, the worst
// was 8.6e-4 (GPT's embedding table, two stages). A tensor whose gradient
// is zero in exact arithmetic (attention's key bias) is moved by Adam by
// rounding noise alone, which bf16 makes about lr a step: one that the
// same model in fp32 leaves below 1e-6 is only held to moving no further
// than on one device.
//
//===----------------------------------------------------------------------===//

#include "test/unit/EquivalenceSupport.h"

namespace {

using namespace whale::testing;

/// `text` with amp = "bf16" in its config (a config block made where it
/// has none, before `model`).
std::string withAmp(const std::string &text) {
  if (text.find("config {") != std::string::npos)
    return edit(text, "config {", "config {\n  amp = \"bf16\"");
  return edit(text, "\nmodel ", "\nconfig {\n  amp = \"bf16\"\n}\n\nmodel ");
}

double largest(const std::vector<float> &v) {
  double m = 0;
  for (float x : v)
    m = worseOf(m, std::fabs(double(x)));
  return m;
}

/// With `epilogues`, the plan's linear layers run as GPU plans run them
/// (-whale-gemm-epilogues, forced on for CPU devices): the product's sum
/// never rounded before its bias, the GELU's preactivation kept in bf16,
/// the bias's gradient summed from the bf16 output gradient.
void expectEquivalentUnderAmp(const std::string &text, const char *name,
                              const std::string &cluster,
                              bool epilogues = false) {
  auto amp = [](whale::TrainOptions &o) { o.ampStorage = true; };
  auto plannedAmp = [epilogues](whale::TrainOptions &o) {
    o.ampStorage = true;
    if (epilogues)
      o.gemmEpilogues = true;
  };
  whale::TrainResult fp32 = trainText(text, name, "");
  // One device runs its layers as the plan does: the plan of one device
  // where the plan's layers take epilogues.
  whale::TrainResult local =
      epilogues ? trainText(withAmp(text), name, "cpu:1", plannedAmp)
                : trainText(withAmp(text), name, "", amp);
  whale::TrainResult planned =
      trainText(withAmp(text), name, cluster, plannedAmp);
  ASSERT_TRUE(fp32.ok) << fp32.error;
  ASSERT_TRUE(local.ok) << local.error;
  ASSERT_TRUE(planned.ok) << planned.error;
  ASSERT_EQ(planned.losses.size(), local.losses.size());
  double lossWorst = 0, worst = 0;
  for (size_t i = 0; i < local.losses.size(); ++i) {
    ASSERT_TRUE(std::isfinite(planned.losses[i])) << "step " << i + 1;
    lossWorst =
        worseOf(lossWorst, relative(planned.losses[i], local.losses[i]));
    EXPECT_LT(relative(planned.losses[i], local.losses[i]), 1e-4)
        << "step " << i + 1 << ": " << planned.losses[i] << " vs "
        << local.losses[i];
  }
  ASSERT_EQ(planned.parameters.size(), local.parameters.size());
  int noise = 0;
  for (const auto &[pname, want] : local.parameters) {
    const std::vector<float> &got = planned.parameters[pname];
    ASSERT_EQ(got.size(), want.size()) << pname;
    if (largest(fp32.parameters[pname]) < 1e-6) {
      ++noise;
      EXPECT_LE(largest(got), 2 * largest(want) + 1e-6)
          << pname << " moved by noise alone";
      continue;
    }
    double diff = 0;
    for (size_t i = 0; i < want.size(); ++i)
      diff = worseOf(diff, std::fabs(double(got[i]) - double(want[i])));
    double rel = diff / std::max(largest(want), 1e-3);
    worst = worseOf(worst, rel);
    EXPECT_LT(rel, 2e-3) << pname << " (scale " << largest(want) << ")";
  }
  std::printf("%s on %s under amp's storage%s: 5 losses within %.1e, "
              "parameters within %.1e (%d moved by noise alone)\n",
              name, cluster.c_str(), epilogues ? " with GEMM epilogues" : "",
              lossWorst, worst, noise);
}

TEST(AmpEquivalence, MlpDataParallelOverFourDevices) {
  expectEquivalentUnderAmp(source(kMlp), kMlp, "cpu:4");
}

TEST(AmpEquivalence, MlpGradientAccumulationOnOneDevice) {
  expectEquivalentUnderAmp(edit(source(kMlp), "\nmodel mlp",
                                "\nconfig {\n  num_micro_batch = 4\n}\n\nmodel "
                                "mlp"),
                           kMlp, "cpu:1");
}

TEST(AmpEquivalence, GptTwoStages1F1BNestedDataParallel) {
  expectEquivalentUnderAmp(source(kGpt), kGpt, "cpu:4");
}

TEST(AmpEquivalence, GptGradientAccumulationOnOneDevice) {
  expectEquivalentUnderAmp(source(kGpt), kGpt, "cpu:1");
}

TEST(AmpEquivalence, MlpSplitOverFourDevices) {
  expectEquivalentUnderAmp(source(kMlpSplit), kMlpSplit, "cpu:4");
}

TEST(AmpEquivalence, HybridReplicatedFeaturesSplitClassifier) {
  expectEquivalentUnderAmp(source(kHybrid), kHybrid, "cpu:4");
}

TEST(AmpEquivalence, GptTwoStagesWithGemmEpilogues) {
  expectEquivalentUnderAmp(source(kGpt), kGpt, "cpu:4", /*epilogues=*/true);
}

TEST(AmpEquivalence, MlpSplitWithGemmEpilogues) {
  expectEquivalentUnderAmp(source(kMlpSplit), kMlpSplit, "cpu:4",
                           /*epilogues=*/true);
}

TEST(AmpEquivalence, MlpDataParallelWithGemmEpilogues) {
  expectEquivalentUnderAmp(source(kMlp), kMlp, "cpu:4", /*epilogues=*/true);
}

} // namespace
