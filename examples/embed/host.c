/* A host application that embeds Whale through its C API: it checks a
 * model written inline (errors come back as values), plans it and predicts
 * its speed on two devices, then trains it on batches from its own memory,
 * reads and writes a parameter, and saves and resumes a checkpoint.
 *
 *   host [CHECKPOINT]        (build/bin/whale-embed-example in the build)
 */
#include "whale/whale.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *kBad = "model tiny(x: f32[B, 8]) {\n"
                          "  return mean(x @ param([4, 4]))\n"
                          "}\n";

/* A classifier of 8 features into 4 classes, with a train block for its
 * optimizer (the host brings the data). */
static const char *kGood = "import nn\n"
                           "model tiny(x: f32[B, 8], y: i32[B]) {\n"
                           "  replicate {\n"
                           "    loss = mean(cross_entropy(nn.mlp(x, 32), y))\n"
                           "  }\n"
                           "  return loss\n"
                           "}\n"
                           "train tiny {\n"
                           "  data = synthetic(batch = 16, seed = 1)\n"
                           "  optimizer = adam(lr = 0.01)\n"
                           "  steps = 100\n"
                           "}\n";

enum { BATCH = 16, FEATURES = 8 };

static int fail(const char *what, const char *error) {
  fprintf(stderr, "host: %s: %s\n", what, error);
  return 1;
}

int main(int argc, char **argv) {
  const char *checkpoint = argc > 1 ? argv[1] : "host-checkpoint.safetensors";
  whale_interp *w = whale_interp_create();
  if (!w)
    return 1;

  /* A script with a shape error: the diagnostics are values to show. */
  if (whale_interp_load_string(w, kBad, "bad.whl") != WHALE_ERROR_SCRIPT)
    return fail("bad.whl", "expected the bad script to fail");
  printf("bad.whl: %zu diagnostic(s)\n%s", whale_interp_num_diagnostics(w),
         whale_interp_diagnostics(w));

  if (whale_interp_load_string(w, kGood, "good.whl") != WHALE_OK)
    return fail("good.whl", whale_interp_diagnostics(w));
  char *ir = whale_interp_emit(w, "whale");
  if (!ir)
    return fail("emit", "no IR");
  printf("good.whl compiles to %zu bytes of whale IR\n", strlen(ir));
  whale_string_free(ir);

  /* The plan and the predicted iteration on two CPU devices, as JSON. */
  char *plan = NULL, *sim = NULL;
  if (whale_interp_plan(w, "cpu:2", &plan) != WHALE_OK)
    return fail("plan", whale_interp_last_error(w));
  printf("plan on cpu:2: %s\n",
         strstr(plan, "\"replicas\": 2") ? "2 replicas" : plan);
  whale_string_free(plan);
  if (whale_interp_simulate(w, "cpu:2", NULL, &sim) != WHALE_OK)
    return fail("simulate", whale_interp_last_error(w));
  printf("simulated: %s\n",
         strstr(sim, "\"iteration_s\"") ? "an iteration time" : sim);
  whale_string_free(sim);
  if (whale_interp_plan(w, "cpu:0", &plan) != WHALE_ERROR_RUN)
    return fail("plan on cpu:0", "expected an error");
  printf("plan on cpu:0: %s\n", whale_interp_last_error(w));

  /* A job: the train step compiled here, fed from this host's memory. */
  whale_job *job = NULL;
  if (whale_job_create(w, NULL, BATCH, 1, &job) != WHALE_OK)
    return fail("job", whale_interp_last_error(w));
  whale_interp_destroy(w); /* the job keeps its own copy of the program */
  for (size_t i = 0; i < whale_job_num_inputs(job); ++i)
    printf("input %s: %s, rank %d, %lld rows\n", whale_job_input_name(job, i),
           whale_job_input_dtype(job, i) == WHALE_F32 ? "f32" : "i32",
           whale_job_input_rank(job, i), whale_job_input_dim(job, i, 0));

  /* One fixed batch: the class is the feature with the largest value. */
  float *x = aligned_alloc(64, sizeof(float) * BATCH * FEATURES);
  int *y = aligned_alloc(64, sizeof(int) * 64);
  if (!x || !y)
    return 1;
  for (int i = 0; i < BATCH; ++i) {
    y[i] = i % 4;
    for (int f = 0; f < FEATURES; ++f)
      x[i * FEATURES + f] = f == y[i] ? 1.0f : 0.1f * (float)((i + f) % 3);
  }
  const void *batch[2] = {x, y};
  double first = 0, loss = 0;
  for (int s = 0; s < 30; ++s) {
    if (whale_job_step(job, batch, &loss) != WHALE_OK)
      return fail("step", whale_job_last_error(job));
    if (s == 0)
      first = loss;
  }
  char *metrics = whale_job_metrics(job);
  printf("30 steps: loss %.3f -> %.3f (%s)\n", first, loss,
         loss < first / 2 ? "falls" : "does not fall");
  printf("last step: %s\n",
         strstr(metrics, "\"step\": 30") ? "step 30" : metrics);
  whale_string_free(metrics);

  /* Parameters by name, and errors as values. */
  const char *name = whale_job_param_name(job, 0);
  long long n = whale_job_param_numel(job, name);
  float *values = malloc(sizeof(float) * (size_t)n);
  if (!values || whale_job_read_param(job, name, values, (size_t)n) != WHALE_OK)
    return fail("read", whale_job_last_error(job));
  printf("%zu parameters; %s has %lld values\n", whale_job_num_params(job),
         name, n);
  if (whale_job_read_param(job, name, values, 3) != WHALE_ERROR_RUN)
    return fail("read 3", "expected an error");
  printf("reading 3 values: %s\n", whale_job_last_error(job));

  /* Save, step on, then resume from the save: the step repeats exactly. */
  if (whale_job_save(job, checkpoint) != WHALE_OK)
    return fail("save", whale_job_last_error(job));
  double next = 0, again = 0;
  whale_job_step(job, batch, &next);
  if (whale_job_load(job, checkpoint) != WHALE_OK)
    return fail("load", whale_job_last_error(job));
  printf("resumed at step %lld\n", whale_job_steps_done(job));
  whale_job_step(job, batch, &again);
  printf("step 31 after resuming: %s\n",
         next == again ? "the same loss" : "a different loss");

  free(values);
  free(x);
  free(y);
  whale_job_destroy(job);
  return 0;
}
