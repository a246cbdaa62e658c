//===- TrainTest.cpp - whale::train end to end ----------------------------===//

#include "whale/Train.h"
#include "test/unit/TempPath.h"
#include "test/unit/Worst.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <numeric>

namespace {

std::string example(const char *name) {
  return std::string(WHALE_SOURCE_DIR) + "/examples/" + name;
}

whale::TrainResult trainFile(const std::string &path,
                             whale::TrainOptions opts) {
  whale::Interpreter interp;
  EXPECT_TRUE(interp.loadFile(path)) << interp.renderDiagnostics();
  opts.threads = 2; // one thread count, so every run rounds alike
  return whale::train(interp, opts);
}

/// The example at `path` with `config` (a config block) put before it.
whale::TrainResult trainWithConfig(const std::string &path,
                                   const std::string &config,
                                   whale::TrainOptions opts) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  whale::Interpreter interp;
  EXPECT_TRUE(interp.loadString(config + "\n" + text, path))
      << interp.renderDiagnostics();
  opts.threads = 2;
  return whale::train(interp, opts);
}

/// The mean of the last ten losses.
double lastTen(const std::vector<double> &losses) {
  return std::accumulate(losses.end() - 10, losses.end(), 0.0) / 10;
}

TEST(Train, TheMlpExampleLearnsItsSyntheticTeacher) {
  // 200 steps of fresh samples from a random linear teacher over 10
  // classes: the loss starts at ln 10 and falls below 1.
  whale::TrainResult r = trainFile(example("mlp.whl"), {});
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.losses.size(), 200u);
  EXPECT_NEAR(r.losses.front(), std::log(10.0), 0.05);
  double last10 =
      std::accumulate(r.losses.end() - 10, r.losses.end(), 0.0) / 10;
  EXPECT_LT(last10, 1.0);
  std::printf("mlp: loss %.4f -> mean of the last 10 steps %.4f\n",
              r.losses.front(), last10);
}

TEST(Train, AmpBf16TrainsCloseToFp32ButRoundsItsMatmuls) {
  // amp = "bf16" rounds every matmul input to bf16 (8 significant bits):
  // the mlp learns as in fp32, its losses a little off, never identical.
  whale::TrainOptions opts;
  whale::TrainResult fp32 = trainFile(example("mlp.whl"), opts);
  whale::TrainResult bf16 =
      trainWithConfig(example("mlp.whl"), "config { amp = \"bf16\" }", opts);
  ASSERT_TRUE(fp32.ok && bf16.ok) << fp32.error << bf16.error;
  double worst = 0;
  bool differs = false;
  for (size_t i = 0; i < fp32.losses.size(); ++i) {
    worst = worseOf(worst, std::fabs(bf16.losses[i] - fp32.losses[i]) /
                                fp32.losses[i]);
    differs = differs || bf16.losses[i] != fp32.losses[i];
  }
  EXPECT_TRUE(differs);
  EXPECT_LT(worst, 2e-2);
  EXPECT_LT(lastTen(bf16.losses), 1.0);
  std::printf("mlp, 200 steps: bf16 losses within %.2e of fp32's; last %.4f "
              "vs %.4f\n",
              worst, bf16.losses.back(), fp32.losses.back());
}

TEST(Train, Bf16ActivationsTrainCloseToFp32) {
  // amp's storage contract, on the mlp: parameters and their gradients
  // fp32, matmuls on bf16 operands as amp = "bf16" runs them, and the
  // forward products that fused kernels read stored in bf16 (the hidden
  // layer's product, which its bias and ReLU kernel widens as it loads
  // it), rounded as autocast's matmuls round theirs. So it rounds more
  // than amp alone, which rounds only the matmuls' operands: its losses
  // differ from amp's, by about as much as amp's from fp32's. bf16 keeps 8
  // significant bits (relative rounding 2^-9 = 2e-3 per value); over 200 steps
  // the losses stay within 1% of fp32's (1.1e-3 measured) and learn as they do.
  whale::TrainOptions opts;
  whale::TrainResult fp32 = trainFile(example("mlp.whl"), opts);
  const std::string amp = "config { amp = \"bf16\" }";
  whale::TrainResult matmuls = trainWithConfig(example("mlp.whl"), amp, opts);
  opts.ampStorage = true;
  whale::TrainResult stored = trainWithConfig(example("mlp.whl"), amp, opts);
  ASSERT_TRUE(fp32.ok && matmuls.ok && stored.ok)
      << fp32.error << matmuls.error << stored.error;
  ASSERT_EQ(stored.losses.size(), fp32.losses.size());
  double worst = 0, fromAmp = 0;
  for (size_t i = 0; i < fp32.losses.size(); ++i) {
    ASSERT_TRUE(std::isfinite(stored.losses[i])) << i;
    worst = worseOf(worst, std::fabs(stored.losses[i] - fp32.losses[i]) /
                               fp32.losses[i]);
    fromAmp = worseOf(fromAmp, std::fabs(stored.losses[i] - matmuls.losses[i]) /
                                   matmuls.losses[i]);
  }
  EXPECT_NE(stored.losses, matmuls.losses);
  EXPECT_NE(stored.losses, fp32.losses);
  EXPECT_LT(worst, 1e-2);
  EXPECT_LT(fromAmp, 1e-2);
  EXPECT_LT(lastTen(stored.losses), 1.0);
  std::printf("mlp, %zu steps, bf16 activations: losses within %.2e of "
              "fp32's, %.2e of amp's; last %.4f vs %.4f\n",
              stored.losses.size(), worst, fromAmp, stored.losses.back(),
              fp32.losses.back());
}

TEST(Train, SaveStopLoadContinueEqualsAnUninterruptedRun) {
  std::string ckpt = whale::testing::tempPath("mlp-step10.safetensors");
  whale::TrainOptions straight;
  straight.steps = 20;
  whale::TrainResult a = trainFile(example("mlp.whl"), straight);
  ASSERT_TRUE(a.ok) << a.error;

  whale::TrainOptions first;
  first.steps = 10;
  first.savePath = ckpt;
  whale::TrainResult b = trainFile(example("mlp.whl"), first);
  ASSERT_TRUE(b.ok) << b.error;

  whale::TrainOptions resumed;
  resumed.steps = 20;
  resumed.loadPath = ckpt;
  whale::TrainResult c = trainFile(example("mlp.whl"), resumed);
  ASSERT_TRUE(c.ok) << c.error;
  EXPECT_EQ(c.firstStep, 11);
  ASSERT_EQ(c.losses.size(), 10u);
  // Parameters, Adam's moments, the step and the data position all carry
  // over: the same numbers, bit for bit.
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(b.losses[i], a.losses[i]) << "step " << i + 1;
    EXPECT_EQ(c.losses[i], a.losses[10 + i]) << "step " << i + 11;
  }
}

TEST(Train, SaveEveryWritesResumableCheckpointsWhileItRuns) {
  // save_every = 4 over 12 steps: a run stopped at step 6 has left the
  // checkpoint of step 4, and resuming from it gives the uninterrupted
  // run's losses for steps 5 to 12, bit for bit.
  std::ifstream in(example("mlp.whl"));
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  size_t at = text.find("steps = 200");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 11, "steps = 12\n  save_every = 4");
  auto run = [&](whale::TrainOptions opts) {
    whale::Interpreter interp;
    EXPECT_TRUE(interp.loadString(text, example("mlp.whl")))
        << interp.renderDiagnostics();
    opts.threads = 2;
    return whale::train(interp, opts);
  };
  std::string ckpt = whale::testing::tempPath("mlp-every4.safetensors");
  std::string stopped = whale::testing::tempPath("mlp-stopped.safetensors");
  std::remove(ckpt.c_str());
  whale::TrainOptions saving;
  saving.savePath = ckpt;
  saving.onStep = [&](const whale::StepReport &r) {
    if (r.step != 6)
      return;
    // What a kill at this point would leave on disk.
    std::ifstream from(ckpt, std::ios::binary);
    ASSERT_TRUE(from.good()) << "no checkpoint by step 6";
    std::ofstream to(stopped, std::ios::binary);
    to << from.rdbuf();
  };
  whale::TrainResult whole = run(saving);
  ASSERT_TRUE(whole.ok) << whole.error;
  ASSERT_EQ(whole.losses.size(), 12u);

  whale::TrainOptions resumed;
  resumed.loadPath = stopped;
  whale::TrainResult rest = run(resumed);
  ASSERT_TRUE(rest.ok) << rest.error;
  EXPECT_EQ(rest.firstStep, 5);
  ASSERT_EQ(rest.losses.size(), 8u);
  for (size_t i = 0; i < 8; ++i)
    EXPECT_EQ(rest.losses[i], whole.losses[4 + i]) << "step " << i + 5;

  // The final checkpoint is at step 12: resuming a 12-step run from it
  // has nothing to train, which is an error, not a silent success.
  whale::TrainOptions done;
  done.loadPath = ckpt;
  whale::TrainResult nothing = run(done);
  EXPECT_FALSE(nothing.ok);
  EXPECT_EQ(nothing.error, "checkpoint '" + ckpt +
                               "' is at step 12, which leaves nothing of "
                               "this run's 12 steps; give more with --steps");
}

TEST(Train, ClearErrors) {
  auto load = [](const char *source, whale::TrainOptions opts = {}) {
    whale::Interpreter interp;
    EXPECT_TRUE(interp.loadString(source, "t.whl"))
        << interp.renderDiagnostics();
    opts.threads = 2;
    return whale::train(interp, opts);
  };
  whale::TrainResult missing = load(R"(
model lm(tokens: i32[B, 4], targets: i32[B, 4]) {
  return mean(cross_entropy(embedding(param([256, 256]), tokens), targets))
}
train lm {
  data = text("/no/such/corpus", seq = 4, batch = 2)
  optimizer = sgd(lr = 0.1)
  steps = 1
}
)");
  EXPECT_FALSE(missing.ok);
  EXPECT_EQ(missing.error,
            "cannot read text data '/no/such/corpus': No such file or "
            "directory");

  whale::TrainResult nan = load(R"(
model m(x: f32[B, 4], y: i32[B]) {
  logits = log(x - 10) @ param([4, 3])
  return mean(cross_entropy(logits, y))
}
train m {
  data = synthetic(batch = 8)
  optimizer = sgd(lr = 0.1)
  steps = 3
}
)");
  EXPECT_FALSE(nan.ok);
  EXPECT_EQ(nan.error, "step 1: the loss is NaN (run with a trace to find the "
                       "first op that produced it)");

  // With a trace, the first op whose output went non-finite is named.
  whale::TrainOptions traced;
  traced.tracePath = whale::testing::tempPath("nan-trace.json");
  whale::TrainResult nanTraced = load(R"(
model m(x: f32[B, 4], y: i32[B]) {
  logits = log(x - 10) @ param([4, 3])
  return mean(cross_entropy(logits, y))
}
train m {
  data = synthetic(batch = 8)
  optimizer = sgd(lr = 0.1)
  steps = 3
}
)",
                                      traced);
  EXPECT_EQ(nanTraced.error,
            "step 1: the loss is NaN; the first op to produce a NaN or "
            "an infinity was 'fused: sub log'");

  std::string ckpt = whale::testing::tempPath("other-model.safetensors");
  whale::TrainOptions save;
  save.steps = 1;
  save.savePath = ckpt;
  ASSERT_TRUE(trainFile(example("mlp.whl"), save).ok);
  whale::TrainOptions wrong;
  wrong.loadPath = ckpt;
  whale::TrainResult other = load(R"(
model n(x: f32[B, 4], y: i32[B]) { return mean(cross_entropy(x @ param([4, 3]), y)) }
train n {
  data = synthetic(batch = 8)
  optimizer = sgd(lr = 0.1)
  steps = 2
}
)",
                                  wrong);
  EXPECT_FALSE(other.ok);
  EXPECT_EQ(other.error,
            "checkpoint '" + ckpt + "' is of model 'mlp', not 'n'");
}

TEST(Train, TheGptExampleDropsBelowTheTextsUnigramEntropy) {
  // The byte unigram entropy of the training text is the loss of the best
  // model that ignores context; a transformer that reads context must do
  // better. Computed here from the same files the data source reads.
  // 150 steps (about 35 s on 2 cores) of the example's 300; the schedule
  // then spans those 150.
  whale::TrainOptions opts;
  opts.steps = 150;
  whale::TrainResult r = trainFile(example("gpt.whl"), opts);
  ASSERT_TRUE(r.ok) << r.error;
  std::map<int, double> counts;
  double n = 0;
  for (const char *dir : {"/usr/share/common-licenses"}) {
    FILE *ls =
        popen(("find " + std::string(dir) + " -type f | sort").c_str(), "r");
    char path[4096];
    while (ls && std::fgets(path, sizeof path, ls)) {
      path[std::strcspn(path, "\n")] = 0;
      std::ifstream f(path, std::ios::binary);
      for (char c; f.get(c);) {
        counts[static_cast<unsigned char>(c)] += 1;
        n += 1;
      }
    }
    if (ls)
      pclose(ls);
  }
  double entropy = 0;
  for (auto &[b, c] : counts)
    entropy -= c / n * std::log(c / n);
  double last10 =
      std::accumulate(r.losses.end() - 10, r.losses.end(), 0.0) / 10;
  EXPECT_NEAR(r.losses.front(), std::log(256.0), 0.1);
  EXPECT_LT(last10, entropy - 0.2);
  std::printf(
      "gpt: loss %.4f -> %.4f (last 10 steps) against a unigram entropy "
      "of %.4f nats\n",
      r.losses.front(), last10, entropy);
}

} // namespace
