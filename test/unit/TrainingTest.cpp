//===- TrainingTest.cpp - whale::Training: train() a step at a time -------===//
//
// The steppable run the Python package drives: the same losses as train()
// on one device and under a plan, a stop between steps that saves, a save
// and a read of the state between steps, and the host's batches
// (TrainOptions::data) as the data of every plan.
//
//===----------------------------------------------------------------------===//

#include "test/unit/TempPath.h"
#include "whale/Job.h"
#include "whale/Train.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>

namespace training_test {

// y = x w: the host's batches give every row's target.
const char *kLinear = "model lin(x: f32[B, 2], y: f32[B, 1]) {\n"
                      "  w = param([2, 1])\n"
                      "  d = x @ w - y\n"
                      "  return mean(d * d)\n"
                      "}\n"
                      "train lin {\n"
                      "  data = synthetic(batch = 8, seed = 1)\n"
                      "  optimizer = sgd(lr = 0.1)\n"
                      "  steps = 6\n"
                      "}\n";

std::string example(const char *name) {
  return std::string(WHALE_SOURCE_DIR) + "/examples/" + name;
}

std::vector<double> stepped(whale::Interpreter &interp,
                            const whale::TrainOptions &options,
                            whale::TrainResult &result) {
  whale::Training run(interp, options);
  std::vector<double> losses;
  whale::StepReport r;
  while (run.next(r))
    losses.push_back(r.loss);
  result = run.finish();
  return losses;
}

/// Batch `step` of the host's data: row r of step s is (s + r, 1 - r / 8),
/// its target 2 x0 - x1.
void hostBatch(int64_t step, float *x, float *y, int64_t rows) {
  for (int64_t r = 0; r < rows; ++r) {
    x[2 * r] = static_cast<float>(step + r) / 8;
    x[2 * r + 1] = 1 - static_cast<float>(r) / 8;
    y[r] = 2 * x[2 * r] - x[2 * r + 1];
  }
}

TEST(Training, SteppedRunsGiveTrainsLossesOnOneDeviceAndUnderAPlan) {
  for (const char *cluster : {"", "cpu:2"}) {
    whale::Interpreter interp;
    ASSERT_TRUE(interp.loadFile(example("mlp.whl")));
    whale::TrainOptions options;
    options.steps = 5;
    options.cluster = cluster;
    whale::TrainResult whole = whale::train(interp, options);
    ASSERT_TRUE(whole.ok) << whole.error;
    whale::TrainResult result;
    std::vector<double> losses = stepped(interp, options, result);
    ASSERT_TRUE(result.ok) << result.error;
    EXPECT_EQ(losses, whole.losses) << "cluster '" << cluster << "'";
    EXPECT_EQ(result.losses, whole.losses);
  }
}

TEST(Training, AStopBetweenStepsEndsTheRunAndSavesWhatItDid) {
  std::string ckpt = whale::testing::tempPath("stopped.safetensors");
  whale::Interpreter interp;
  ASSERT_TRUE(interp.loadFile(example("mlp.whl")));
  whale::TrainOptions options;
  options.steps = 50;
  options.savePath = ckpt;
  options.cluster = "cpu:2";
  whale::Training run(interp, options);
  whale::StepReport r;
  ASSERT_TRUE(run.next(r));
  ASSERT_TRUE(run.next(r));
  EXPECT_EQ(r.step, 2);
  run.stop();
  EXPECT_FALSE(run.next(r));
  EXPECT_EQ(run.stepsDone(), 2);
  whale::TrainResult result = run.finish();
  EXPECT_FALSE(result.ok);
  EXPECT_TRUE(result.stopped);
  EXPECT_EQ(result.losses.size(), 2u);

  // The checkpoint holds two steps: a third from it is the third of a run
  // that never stopped.
  whale::TrainOptions resumed;
  resumed.steps = 3;
  resumed.loadPath = ckpt;
  whale::TrainResult c = whale::train(interp, resumed);
  ASSERT_TRUE(c.ok) << c.error;
  EXPECT_EQ(c.firstStep, 3);
  whale::TrainOptions straight;
  straight.steps = 3;
  whale::TrainResult s = whale::train(interp, straight);
  ASSERT_TRUE(s.ok) << s.error;
  ASSERT_EQ(c.losses.size(), 1u);
  EXPECT_EQ(c.losses[0], s.losses[2]);
}

TEST(Training, TheStateIsSavedAndReadBetweenStepsWhateverThePlan) {
  std::string ckpt = whale::testing::tempPath("between.safetensors");
  whale::Interpreter interp;
  ASSERT_TRUE(interp.loadFile(example("mlp.whl")));
  whale::TrainOptions options;
  options.steps = 4;
  options.cluster = "cpu:2";
  whale::Training run(interp, options);
  whale::StepReport r;
  ASSERT_TRUE(run.next(r));
  std::string error;
  ASSERT_TRUE(run.save(ckpt, error)) << error;
  std::vector<whale::TensorInfo> info;
  std::vector<std::vector<float>> values;
  ASSERT_TRUE(run.parameters(info, values, error)) << error;
  ASSERT_FALSE(info.empty());

  // A job loads the file: its parameters are the run's, bit for bit.
  whale::JobOptions jobOptions;
  jobOptions.threads = 1;
  std::unique_ptr<whale::Job> job =
      whale::Job::create(interp, jobOptions, error);
  ASSERT_TRUE(job) << error;
  ASSERT_TRUE(job->load(ckpt, error)) << error;
  EXPECT_EQ(job->stepsDone(), 1);
  for (size_t i = 0; i < info.size(); ++i) {
    EXPECT_EQ(int64_t(values[i].size()), info[i].elements()) << info[i].name;
    std::vector<float> loaded(values[i].size());
    ASSERT_TRUE(job->readParameter(info[i].name, loaded.data(),
                                   int64_t(loaded.size()), error))
        << error;
    EXPECT_EQ(0, std::memcmp(loaded.data(), values[i].data(),
                             loaded.size() * sizeof(float)))
        << info[i].name;
  }
  while (run.next(r)) {
  }
  whale::TrainResult result = run.finish();
  EXPECT_TRUE(result.ok) << result.error;
  // After the run too.
  ASSERT_TRUE(run.parameters(info, values, error)) << error;
}

TEST(Training, TheHostsBatchesAreTheDataOfEveryPlan) {
  whale::Interpreter interp;
  ASSERT_TRUE(interp.loadString(kLinear, "lin.whl"));
  std::vector<std::string> names;
  whale::TrainOptions options;
  options.data = [&](int64_t step, std::vector<whale::HostBatchBuffer> &in) {
    names.clear();
    for (const whale::HostBatchBuffer &b : in)
      names.push_back(b.name);
    EXPECT_EQ(in[0].shape, (std::vector<int64_t>{8, 2}));
    hostBatch(step, static_cast<float *>(in[0].data),
              static_cast<float *>(in[1].data), in[0].shape[0]);
    return whale::HostBatchOutcome{};
  };
  whale::TrainResult one = whale::train(interp, options);
  ASSERT_TRUE(one.ok) << one.error;
  EXPECT_EQ(names, (std::vector<std::string>{"x", "y"}));

  // A job fed the same batches by hand takes the same steps.
  std::string error;
  whale::JobOptions jobOptions;
  jobOptions.threads = 1;
  std::unique_ptr<whale::Job> job =
      whale::Job::create(interp, jobOptions, error);
  ASSERT_TRUE(job) << error;
  ASSERT_EQ(one.losses.size(), 6u);
  for (int64_t s = 0; s < 6; ++s) {
    alignas(64) float x[16], y[8];
    hostBatch(s, x, y, 8);
    const void *inputs[] = {x, y};
    ASSERT_TRUE(job->step(inputs, error)) << error;
    EXPECT_EQ(job->lastStep().loss, one.losses[s]) << "step " << s + 1;
  }

  // Under a plan the global batch is split as the script's data is; the
  // gradient's sum runs in another order (each replica's rows, then the
  // all-reduce), a few fp32 roundings (u = 6e-8) a step over 6 SGD steps of
  // two weights: 1e-5 relative, well inside the contract's 1e-4.
  options.cluster = "cpu:2";
  whale::TrainResult two = whale::train(interp, options);
  ASSERT_TRUE(two.ok) << two.error;
  for (size_t s = 0; s < 6; ++s)
    EXPECT_NEAR(two.losses[s], one.losses[s], 1e-5 * std::abs(one.losses[s]))
        << "step " << s + 1;
}

TEST(Training, TheHostEndsTheRunAsAStopOrFailsItSayingWhy) {
  whale::Interpreter interp;
  ASSERT_TRUE(interp.loadString(kLinear, "lin.whl"));
  whale::TrainOptions options;
  options.data = [](int64_t step, std::vector<whale::HostBatchBuffer> &in) {
    hostBatch(step, static_cast<float *>(in[0].data),
              static_cast<float *>(in[1].data), in[0].shape[0]);
    whale::HostBatchOutcome o;
    o.stop = step == 2;
    return o;
  };
  whale::TrainResult ended = whale::train(interp, options);
  EXPECT_TRUE(ended.stopped);
  EXPECT_EQ(ended.losses.size(), 2u);

  options.data = [](int64_t step, std::vector<whale::HostBatchBuffer> &) {
    whale::HostBatchOutcome o;
    o.error = "the reader lost its file";
    return o;
  };
  whale::TrainResult failed = whale::train(interp, options);
  EXPECT_FALSE(failed.ok);
  EXPECT_FALSE(failed.stopped);
  EXPECT_NE(failed.error.find("step 1: the host's data: the reader lost its "
                              "file"),
            std::string::npos)
      << failed.error;
}

} // namespace training_test
