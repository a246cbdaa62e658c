//===- JobTest.cpp - whale::Job and the C API over it ---------------------===//

#include "whale/Job.h"
#include "test/unit/TempPath.h"
#include "whale/whale.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <thread>

namespace {

// A linear least-squares model whose one SGD step is computed by hand.
const char *kLinear = "model lin(x: f32[B, 2], y: f32[B, 1]) {\n"
                      "  w = param([2, 1])\n"
                      "  d = x @ w - y\n"
                      "  return mean(d * d)\n"
                      "}\n"
                      "train lin {\n"
                      "  data = synthetic(batch = 4, seed = 1)\n"
                      "  optimizer = sgd(lr = 0.1)\n"
                      "  steps = 10\n"
                      "}\n";

std::unique_ptr<whale::Job> linearJob(std::string &error) {
  whale::Interpreter interp;
  EXPECT_TRUE(interp.loadString(kLinear, "lin.whl"))
      << interp.renderDiagnostics();
  whale::JobOptions options;
  options.threads = 1;
  return whale::Job::create(interp, options, error); // interp goes: fine
}

struct Batch {
  alignas(64) float x[8] = {1, 0, 0, 1, 1, 1, 2, 1};
  alignas(64) float y[4] = {0, 0, 0, 0};
};

TEST(Job, OneStepOnTheHostsBatchIsTheHandComputedUpdate) {
  std::string error;
  std::unique_ptr<whale::Job> job = linearJob(error);
  ASSERT_TRUE(job) << error;
  ASSERT_EQ(job->inputs().size(), 2u);
  EXPECT_EQ(job->inputs()[0].name, "x");
  EXPECT_EQ(job->inputs()[0].shape, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(job->inputs()[1].dtype, "f32");
  ASSERT_EQ(job->parameters().size(), 1u);
  const std::string w = job->parameters()[0].name;

  // w = [1, 2]: predictions [1, 2, 3, 4], loss (1 + 4 + 9 + 16) / 4 = 7.5,
  // gradient (2 / 4) x^T d = [6, 4.5], so SGD at 0.1 gives [0.4, 1.55].
  const float start[2] = {1, 2};
  ASSERT_TRUE(job->writeParameter(w, start, 2, error)) << error;
  Batch b;
  const void *inputs[] = {b.x, b.y};
  ASSERT_TRUE(job->step(inputs, error)) << error;
  EXPECT_FLOAT_EQ(job->lastStep().loss, 7.5f);
  EXPECT_EQ(job->lastStep().step, 1);
  EXPECT_EQ(job->stepsDone(), 1);
  EXPECT_EQ(job->copiedInputBytes(), 0); // aligned: read in place
  float after[2];
  ASSERT_TRUE(job->readParameter(w, after, 2, error)) << error;
  EXPECT_FLOAT_EQ(after[0], 0.4f);
  EXPECT_FLOAT_EQ(after[1], 1.55f);

  // The same step from buffers 4 bytes off alignment: copied, same numbers.
  ASSERT_TRUE(job->writeParameter(w, start, 2, error)) << error;
  alignas(64) float shifted[1 + 8 + 4];
  std::memcpy(shifted + 1, b.x, sizeof b.x);
  std::memcpy(shifted + 1 + 8, b.y, sizeof b.y);
  const void *unaligned[] = {shifted + 1, shifted + 1 + 8};
  ASSERT_TRUE(job->step(unaligned, error)) << error;
  EXPECT_FLOAT_EQ(job->lastStep().loss, 7.5f);
  EXPECT_EQ(job->copiedInputBytes(), 8 * 4 + 4 * 4);
  ASSERT_TRUE(job->readParameter(w, after, 2, error)) << error;
  EXPECT_FLOAT_EQ(after[0], 0.4f);
  EXPECT_FLOAT_EQ(after[1], 1.55f);
}

TEST(Job, ParametersHaveTheirInitialValuesBeforeTheFirstStep) {
  // Read before any step: the initializer's values, not zeros, and the
  // same as a second job of the same seed makes.
  std::string error;
  std::unique_ptr<whale::Job> a = linearJob(error), b = linearJob(error);
  ASSERT_TRUE(a && b) << error;
  float wa[2], wb[2];
  const std::string w = a->parameters()[0].name;
  ASSERT_TRUE(a->readParameter(w, wa, 2, error)) << error;
  ASSERT_TRUE(b->readParameter(w, wb, 2, error)) << error;
  EXPECT_TRUE(wa[0] != 0 || wa[1] != 0);
  EXPECT_EQ(wa[0], wb[0]);
  EXPECT_EQ(wa[1], wb[1]);
}

TEST(Job, SaveAndLoadResumeTheStepAndTheState) {
  std::string error, path = whale::testing::tempPath("job-resume.safetensors");
  std::remove(path.c_str());
  std::unique_ptr<whale::Job> a = linearJob(error), b = linearJob(error);
  ASSERT_TRUE(a && b) << error;
  Batch batch;
  const void *inputs[] = {batch.x, batch.y};
  for (int s = 0; s < 3; ++s)
    ASSERT_TRUE(a->step(inputs, error)) << error;
  ASSERT_TRUE(a->save(path, error)) << error;
  ASSERT_TRUE(a->step(inputs, error)) << error;
  ASSERT_TRUE(b->load(path, error)) << error;
  EXPECT_EQ(b->stepsDone(), 3);
  ASSERT_TRUE(b->step(inputs, error)) << error;
  EXPECT_EQ(a->lastStep().loss, b->lastStep().loss);
  EXPECT_EQ(b->stepsDone(), 4);
  std::remove(path.c_str());
}

TEST(Job, ClearErrors) {
  std::string error;
  std::unique_ptr<whale::Job> job = linearJob(error);
  ASSERT_TRUE(job) << error;
  float v[2];
  EXPECT_FALSE(job->readParameter("lin/nope", v, 2, error));
  EXPECT_EQ(error, "'lin' has no parameter 'lin/nope'");
  EXPECT_FALSE(job->writeParameter(job->parameters()[0].name, v, 5, error));
  EXPECT_NE(error.find("has 2 elements, not 5"), std::string::npos) << error;
  Batch b;
  const void *missing[] = {b.x, nullptr};
  EXPECT_FALSE(job->step(missing, error));
  EXPECT_EQ(error, "input 1 ('y') has no buffer");
  EXPECT_EQ(job->stepsDone(), 0);
  EXPECT_FALSE(job->load("/nonexistent/ckpt.safetensors", error));
  EXPECT_FALSE(error.empty());

  whale::Interpreter noTrain;
  ASSERT_TRUE(
      noTrain.loadString("model m(x: f32[2]) { return mean(x) }", "m.whl"));
  EXPECT_FALSE(whale::Job::create(noTrain, {}, error));
  EXPECT_NE(error.find("train"), std::string::npos) << error;
  whale::Interpreter lin;
  ASSERT_TRUE(lin.loadString(kLinear, "lin.whl"));
  whale::JobOptions zero;
  zero.batch = 0;
  EXPECT_FALSE(whale::Job::create(lin, zero, error));
  EXPECT_EQ(error, "a job's batch must be at least 1, got 0");
}

TEST(CApiJob, OneJobFromTwoThreadsTwoJobsSideBySideAndErrorsAsValues) {
  whale_interp *w = whale_interp_create();
  ASSERT_EQ(whale_interp_load_string(w, kLinear, "lin.whl"), WHALE_OK);
  whale_job *shared = nullptr, *other = nullptr;
  ASSERT_EQ(whale_job_create(w, nullptr, 0, 1, &shared), WHALE_OK)
      << whale_interp_last_error(w);
  ASSERT_EQ(whale_job_create(w, "lin", 8, 1, &other), WHALE_OK);
  EXPECT_EQ(whale_job_input_dim(other, 0, 0), 8);
  whale_interp_destroy(w); // the jobs keep their own programs

  // Two threads step one job: the calls take turns, every step counts.
  Batch b;
  const void *inputs[] = {b.x, b.y};
  auto steps = [&](whale_job *j, int n) {
    for (int i = 0; i < n; ++i)
      if (whale_job_step(j, inputs, nullptr) != WHALE_OK)
        return false;
    return true;
  };
  bool t1ok = false, t2ok = false;
  std::thread t1([&] { t1ok = steps(shared, 20); });
  std::thread t2([&] { t2ok = steps(shared, 20); });
  t1.join();
  t2.join();
  EXPECT_TRUE(t1ok && t2ok);
  EXPECT_EQ(whale_job_steps_done(shared), 40);

  // Errors come back as statuses with a message.
  EXPECT_EQ(whale_job_step(nullptr, inputs, nullptr), WHALE_ERROR_ARGUMENT);
  float v[3];
  ASSERT_EQ(whale_job_num_params(shared), 1u);
  const std::string name = whale_job_param_name(shared, 0);
  EXPECT_EQ(whale_job_param_name(shared, 1), nullptr);
  EXPECT_EQ(whale_job_read_param(shared, name.c_str(), v, 3), WHALE_ERROR_RUN);
  EXPECT_EQ(std::string(whale_job_last_error(shared)),
            "parameter '" + name + "' has 2 elements, not 3");
  EXPECT_EQ(whale_job_read_param(shared, name.c_str(), v, 2), WHALE_OK);
  EXPECT_STREQ(whale_job_last_error(shared), "");
  EXPECT_EQ(whale_job_param_numel(shared, name.c_str()), 2);
  EXPECT_EQ(whale_job_param_numel(shared, "nope"), -1);
  EXPECT_EQ(whale_job_input_name(shared, 2), nullptr);
  EXPECT_EQ(whale_job_input_dtype(shared, 2), -1);
  char *metrics = whale_job_metrics(shared);
  EXPECT_NE(std::string(metrics).find("\"step\": 40"), std::string::npos)
      << metrics;
  whale_string_free(metrics);
  whale_job_destroy(shared);
  whale_job_destroy(other);
}

TEST(CApiPlan, PlanSimulateAndTrainReportTheirErrors) {
  whale_interp *w = whale_interp_create();
  char *json = nullptr;
  EXPECT_EQ(whale_interp_plan(w, "cpu:2", &json), WHALE_ERROR_RUN);
  EXPECT_NE(std::string(whale_interp_last_error(w)).find("no script"),
            std::string::npos);
  ASSERT_EQ(whale_interp_load_string(w, kLinear, "lin.whl"), WHALE_OK);
  ASSERT_EQ(whale_interp_plan(w, "cpu:2", &json), WHALE_OK)
      << whale_interp_last_error(w);
  EXPECT_NE(std::string(json).find("\"replicas\": 2"), std::string::npos);
  whale_string_free(json);
  EXPECT_EQ(whale_interp_simulate(w, "cpu:2", "/nonexistent.json", &json),
            WHALE_ERROR_RUN);
  EXPECT_EQ(json, nullptr);
  EXPECT_FALSE(std::string(whale_interp_last_error(w)).empty());
  ASSERT_EQ(whale_interp_simulate(w, "cpu:2", nullptr, &json), WHALE_OK);
  EXPECT_NE(std::string(json).find("\"iteration_s\""), std::string::npos);
  whale_string_free(json);
  EXPECT_STREQ(whale_interp_last_error(w), "");
  // Training reads the script's own data: the MLP example's synthetic set.
  ASSERT_EQ(
      whale_interp_load_file(
          w, (std::string(WHALE_SOURCE_DIR) + "/examples/mlp.whl").c_str()),
      WHALE_OK);
  double loss = -1;
  ASSERT_EQ(whale_interp_train(w, nullptr, 3, nullptr, &loss), WHALE_OK)
      << whale_interp_last_error(w);
  EXPECT_GT(loss, 0);
  EXPECT_EQ(whale_interp_train(w, "cpu:2", 3, "/nonexistent/m.jsonl", &loss),
            WHALE_ERROR_RUN);
  whale_interp_destroy(w);
}

} // namespace
