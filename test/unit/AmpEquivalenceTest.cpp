//===- AmpEquivalenceTest.cpp - plans under amp's storage
//------------------===//
//
// amp's contract across plans: a model trained with bf16 activations
// (amp = "bf16" and TrainOptions::ampStorage) under a plan trains as it does
// on one device so. The same ops round the same values on both sides, but
// not to the same bits: a plan sums some fp32 values in another order (a
// replica's rows, a micro-batch's gradient, a fused chain, and OpenBLAS's
// AVX2 and AVX-512 kernels each in their own order), and a value that lands
// within an fp32 ulp of a bf16 rounding boundary then rounds to the
// neighbouring bf16 value, 2^-8 away. The losses keep fp32's tolerance
// (relative 1e-4 after 5 steps). The parameters are held to what the
// arithmetic allows, not to what one CPU measured:
//
// Under Adam, an element's update is lr_t * m/sqrt(v), whose size is at
// most C_t = sqrt(sum_i a_i^2 / b_i) (Cauchy-Schwarz over the first and
// second moments' bias-corrected weights a_i, b_i), whatever the gradients
// are. Both runs start from the same values, so no element can differ by
// more than 2R, R = sum_t lr_t C_t (decoupled weight decay only shrinks a
// difference): that bound is sure. A gradient perturbed by a fraction rho
// of itself changes m/sqrt(v) by at most about 2 rho C_t, so an element
// whose gradient is 32 times larger than its rounding noise stays within
// R/16. An element whose gradient is near zero (a sum of terms that
// cancel: a bias's gradient over 1,024 rows, a rare token's embedding) is
// moved by noise and may take the full 2R; such elements are few in any
// tensor that learns, so each tensor's median difference is held to R/16.
// A missed update or a wrong gradient moves most of a tensor's elements by
// about R, which the median catches. A tensor whose gradient is zero in
// exact arithmetic (attention's key bias: fp32 leaves it below 1e-6) is
// moved by noise alone and held to Adam's reach, R.
//
// Under SGD the update is linear in the gradient and nothing normalizes
// noise up: a flipped rounding moves an element by lr times one bf16 ulp
// (2^-7 relative) of one row's term of its gradient, so the parameters
// are held to 2e-3 of their scale, a quarter of that ulp.
//
//===----------------------------------------------------------------------===//

#include "test/unit/EquivalenceSupport.h"

#include <algorithm>
#include <cmath>

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

double median(std::vector<double> v) {
  if (v.empty())
    return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

/// Whether `text` trains with Adam (adam or adamw, at the default betas
/// every script here uses) rather than SGD.
bool trainsWithAdam(const std::string &text) {
  return text.find("optimizer = adam") != std::string::npos;
}

/// C_t: the largest |m_t / sqrt(v_t)| Adam's bias-corrected moments allow
/// after t steps, whatever the gradients.
double adamStepBound(int64_t t, double beta1 = 0.9, double beta2 = 0.999) {
  const double c1 = 1 - std::pow(beta1, double(t));
  const double c2 = 1 - std::pow(beta2, double(t));
  double sum = 0;
  for (int64_t i = 1; i <= t; ++i) {
    const double a = (1 - beta1) * std::pow(beta1, double(t - i)) / c1;
    const double b = (1 - beta2) * std::pow(beta2, double(t - i)) / c2;
    sum += a * a / b;
  }
  return std::sqrt(sum);
}

/// With `epilogues`, the plan's linear layers run as GPU plans run them
/// (-whale-gemm-epilogues, forced on for CPU devices): the product's sum
/// never rounded before its bias, the GELU's preactivation kept in bf16,
/// the bias's gradient summed from the bf16 output gradient.
void expectEquivalentUnderAmp(const std::string &text, const char *name,
                              const std::string &cluster,
                              bool epilogues = false) {
  std::vector<double> rates;
  auto amp = [&rates](whale::TrainOptions &o) {
    o.ampStorage = true;
    o.onStep = [&rates](const whale::StepReport &r) {
      rates.push_back(r.learningRate);
    };
  };
  auto plannedAmp = [epilogues](whale::TrainOptions &o) {
    o.ampStorage = true;
    if (epilogues)
      o.gemmEpilogues = true;
  };
  auto localAmp = [&](whale::TrainOptions &o) {
    amp(o);
    if (epilogues)
      o.gemmEpilogues = true;
  };
  whale::TrainResult fp32 = trainText(text, name, "");
  // One device runs its layers as the plan does: the plan of one device
  // where the plan's layers take epilogues.
  whale::TrainResult local =
      epilogues ? trainText(withAmp(text), name, "cpu:1", localAmp)
                : trainText(withAmp(text), name, "", amp);
  whale::TrainResult planned =
      trainText(withAmp(text), name, cluster, plannedAmp);
  ASSERT_TRUE(fp32.ok) << fp32.error;
  ASSERT_TRUE(local.ok) << local.error;
  ASSERT_TRUE(planned.ok) << planned.error;
  ASSERT_EQ(planned.losses.size(), local.losses.size());
  double lossWorst = 0;
  for (size_t i = 0; i < local.losses.size(); ++i) {
    ASSERT_TRUE(std::isfinite(planned.losses[i])) << "step " << i + 1;
    lossWorst =
        worseOf(lossWorst, relative(planned.losses[i], local.losses[i]));
    EXPECT_LT(relative(planned.losses[i], local.losses[i]), 1e-4)
        << "step " << i + 1 << ": " << planned.losses[i] << " vs "
        << local.losses[i];
  }
  const bool adam = trainsWithAdam(text);
  ASSERT_EQ(rates.size(), local.losses.size());
  // Adam's reach: how far any element can move in these steps.
  double reach = 0;
  for (size_t t = 0; t < rates.size(); ++t) {
    ASSERT_TRUE(std::isfinite(rates[t]) && rates[t] >= 0) << rates[t];
    reach += rates[t] * adamStepBound(int64_t(t + 1));
  }
  ASSERT_EQ(planned.parameters.size(), local.parameters.size());
  int noise = 0;
  double worst = 0, worstMedian = 0;
  for (const auto &[pname, want] : local.parameters) {
    const std::vector<float> &got = planned.parameters[pname];
    ASSERT_EQ(got.size(), want.size()) << pname;
    const double scale = largest(want);
    // Half an fp32 ulp of the scale on each side: the values as stored.
    const double stored = std::ldexp(scale, -23);
    std::vector<double> diffs(want.size());
    double diff = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      diffs[i] = std::fabs(double(got[i]) - double(want[i]));
      diff = worseOf(diff, diffs[i]);
    }
    if (largest(fp32.parameters[pname]) < 1e-6) {
      ++noise;
      EXPECT_LE(largest(got), (adam ? reach : 2 * scale + 1e-6) + stored)
          << pname << " moved by noise alone";
      continue;
    }
    if (!adam) {
      const double rel = diff / std::max(scale, 1e-3);
      worst = worseOf(worst, rel);
      EXPECT_LT(rel, 2e-3) << pname << " (scale " << scale << ")";
      continue;
    }
    const double med = median(diffs);
    worst = worseOf(worst, diff / reach);
    worstMedian = worseOf(worstMedian, med / reach);
    EXPECT_LE(diff, 2 * reach + stored)
        << pname << " differs by more than Adam can move it (reach "
        << reach << ")";
    EXPECT_LE(med, reach / 16 + stored)
        << pname << ": half its elements differ by more than R/16 (reach "
        << reach << ")";
  }
  if (adam)
    std::printf("%s on %s under amp's storage%s: 5 losses within %.1e; "
                "parameters within %.2g R at worst, medians within %.2g R "
                "(Adam's reach R = %.3g; %d moved by noise alone)\n",
                name, cluster.c_str(), epilogues ? " with GEMM epilogues" : "",
                lossWorst, worst, worstMedian, reach, noise);
  else
    std::printf("%s on %s under amp's storage%s: 5 losses within %.1e, "
                "parameters within %.1e of their scale (%d moved by noise "
                "alone)\n",
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
