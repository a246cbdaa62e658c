// A C++ host that embeds Whale through whale/Job.h: it loads the MLP
// example, trains it on batches it makes itself (a random linear teacher,
// as the script's own synthetic data does), and shows what each step did.
//
//   host-cpp MLP.whl
#include "whale/Job.h"

#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: host-cpp MLP.whl\n");
    return 2;
  }
  whale::Interpreter interp;
  if (!interp.loadFile(argv[1])) {
    std::fputs(interp.renderDiagnostics().c_str(), stderr);
    return 1;
  }
  std::string error;
  whale::JobOptions options;
  options.threads = 1;
  std::unique_ptr<whale::Job> job = whale::Job::create(interp, options, error);
  if (!job) {
    std::fprintf(stderr, "host-cpp: %s\n", error.c_str());
    return 1;
  }
  const whale::TensorInfo &xs = job->inputs().at(0), &ys = job->inputs().at(1);
  int64_t rows = xs.shape[0], features = xs.shape[1], classes = 10;
  std::printf("model %s: %s [%lld, %lld], %s [%lld]\n", job->model().c_str(),
              xs.name.c_str(), (long long)rows, (long long)features,
              ys.name.c_str(), (long long)ys.shape[0]);

  // A fixed random teacher labels fresh samples each step.
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> teacher(features * classes);
  for (float &t : teacher)
    t = normal(rng);
  std::vector<float> x(rows * features);
  std::vector<int32_t> y(rows);
  double first = 0, last = 0;
  for (int step = 0; step < 100; ++step) {
    for (float &v : x)
      v = normal(rng);
    for (int64_t r = 0; r < rows; ++r) {
      int best = 0;
      float bestScore = -1e30f;
      for (int c = 0; c < classes; ++c) {
        float score = 0;
        for (int64_t f = 0; f < features; ++f)
          score += x[r * features + f] * teacher[f * classes + c];
        if (score > bestScore)
          bestScore = score, best = c;
      }
      y[r] = best;
    }
    const void *batch[] = {x.data(), y.data()};
    if (!job->step(batch, error)) {
      std::fprintf(stderr, "host-cpp: %s\n", error.c_str());
      return 1;
    }
    (step == 0 ? first : last) = job->lastStep().loss;
  }
  std::printf("100 steps: loss %.3f -> %.3f (%s), %lld steps done\n", first,
              last, last < 0.8 * first ? "falls" : "does not fall",
              (long long)job->stepsDone());
  return 0;
}
