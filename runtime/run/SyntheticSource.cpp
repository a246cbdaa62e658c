//===- SyntheticSource.cpp - synthetic(...) batches, made ahead -----------===//

#include "runtime/run/SyntheticSource.h"

#include "runtime/data/DataOrder.h"

#include <algorithm>
#include <cstring>

namespace whale {
namespace {

/// A uniform number in [-1, 1) from (key, index).
float uniform(uint64_t key, uint64_t index) {
  return static_cast<float>((rt::streamValue(key, index) >> 11) * 0x1.0p-52 -
                            1.0);
}

/// The class of the largest score, the first of equal ones.
int32_t argmax(const float *scores, int64_t n) {
  int32_t best = 0;
  float bestScore = -1e30f;
  for (int64_t c = 0; c < n; ++c)
    if (scores[c] > bestScore) {
      bestScore = scores[c];
      best = static_cast<int32_t>(c);
    }
  return best;
}

/// score[c] += v * w[c] for c < n, in blocks of 16 that the compiler turns
/// into vector instructions at -O2 (a loop of unknown length it left
/// scalar: a dense teacher's labels took a tenth of a ResNet-50 run's CPU
/// time). Each score's sum keeps its order: the same labels.
void addScaled(float *__restrict score, float v, const float *__restrict w,
               int64_t n) {
  int64_t c = 0;
  for (; c + 16 <= n; c += 16)
    for (int l = 0; l < 16; ++l)
      score[c + l] += v * w[c + l];
  for (; c < n; ++c)
    score[c] += v * w[c];
}

} // namespace

SyntheticSource::SyntheticSource(uint64_t seed, int64_t batch, int64_t features,
                                 int64_t classes)
    : key(rt::mix64(seed ^ 0x5EED)), teacherKey(rt::mix64(seed ^ 0x7EAC4E2)),
      batch(batch), features(features), classes(classes) {}

SyntheticSource::~SyntheticSource() {
  if (prefetch.joinable())
    prefetch.join();
}

std::vector<int64_t> SyntheticSource::samples(int64_t step) {
  std::vector<int64_t> ids(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b)
    ids[b] = step * batch + b;
  return ids;
}

rt::ThreadPool &SyntheticSource::workers() {
  // One thread drives it at a time: fill, or the prefetch fill waits for.
  if (!pool)
    pool = std::make_unique<rt::ThreadPool>(
        static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  return *pool;
}

void SyntheticSource::makeTeacher() {
  if (teacherMade)
    return;
  teacherMade = true;
  if (features * classes <= kDenseTeacher) {
    teacher.resize(static_cast<size_t>(features * classes));
    workers().parallelFor(features, 64, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin * classes; i < end * classes; ++i)
        teacher[i] = uniform(teacherKey, static_cast<uint64_t>(i));
    });
    return;
  }
  // Two factors, drawn from streams of their own after the dense one's
  // indices (features x classes), so no weight repeats another.
  const uint64_t second =
      static_cast<uint64_t>(features) * static_cast<uint64_t>(classes);
  teacher.resize(static_cast<size_t>(features * kTeacherRank));
  factor.resize(static_cast<size_t>(kTeacherRank * classes));
  for (size_t i = 0; i < teacher.size(); ++i)
    teacher[i] = uniform(teacherKey, second + i);
  workers().parallelFor(kTeacherRank, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin * classes; i < end * classes; ++i)
      factor[i] = uniform(teacherKey, second + teacher.size() + i);
  });
}

void SyntheticSource::label(const float *x, int32_t *y, int64_t begin,
                            int64_t end) const {
  // The rows' scores side by side, each feature's teacher row read once
  // for all of them (a dense teacher of 1,000 classes over a 64 x 64 image
  // is 49 MB). Each score still sums over the features in order, as the
  // teacher always summed it: the same labels.
  const int64_t rows = end - begin;
  std::vector<float> scores(static_cast<size_t>(rows * classes), 0.0f);
  if (factor.empty()) {
    for (int64_t j = 0; j < features; ++j) {
      const float *w = teacher.data() + j * classes;
      for (int64_t b = 0; b < rows; ++b) {
        const float v = x[(begin + b) * features + j];
        addScaled(scores.data() + b * classes, v, w, classes);
      }
    }
  } else {
    std::vector<float> low(static_cast<size_t>(rows * kTeacherRank), 0.0f);
    for (int64_t j = 0; j < features; ++j) {
      const float *u = teacher.data() + j * kTeacherRank;
      for (int64_t b = 0; b < rows; ++b) {
        const float v = x[(begin + b) * features + j];
        addScaled(low.data() + b * kTeacherRank, v, u, kTeacherRank);
      }
    }
    for (int64_t b = 0; b < rows; ++b)
      for (int64_t k = 0; k < kTeacherRank; ++k) {
        addScaled(scores.data() + b * classes, low[b * kTeacherRank + k],
                  factor.data() + k * classes, classes);
      }
  }
  for (int64_t b = 0; b < rows; ++b)
    y[begin + b] = argmax(scores.data() + b * classes, classes);
}

int64_t SyntheticSource::multiplyAddsPerRow() const {
  return features * classes <= kDenseTeacher
             ? features * classes
             : (features + classes) * kTeacherRank;
}

void SyntheticSource::make(int64_t step, std::vector<float> &x,
                           std::vector<int32_t> &y) {
  makeTeacher();
  x.resize(static_cast<size_t>(batch * features));
  y.resize(static_cast<size_t>(batch));
  // About a million multiply-adds a thread, so that small batches stay on
  // one.
  const int64_t grain =
      std::max<int64_t>(1, kWorkPerThread / multiplyAddsPerRow());
  workers().parallelFor(batch, grain, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const uint64_t sample = static_cast<uint64_t>(step * batch + b);
      float *row = x.data() + b * features;
      for (int64_t j = 0; j < features; ++j)
        row[j] = uniform(key, sample * features + j);
    }
    label(x.data(), y.data(), begin, end);
  });
}

void SyntheticSource::startPrefetch(int64_t step) {
  next.step = -1;
  prefetch = std::thread([this, step] {
    make(step, next.x, next.y);
    next.step = step;
  });
}

std::string SyntheticSource::fill(int64_t step,
                                  std::vector<whale_rt_tensor *> &inputs) {
  if (prefetch.joinable())
    prefetch.join();
  if (next.step != step)
    make(step, next.x, next.y);
  std::memcpy(whale_rt_tensor_data(inputs[0]), next.x.data(),
              next.x.size() * sizeof(float));
  std::memcpy(whale_rt_tensor_data(inputs[1]), next.y.data(),
              next.y.size() * sizeof(int32_t));
  // The next step's batch is made while this one runs, unless it costs
  // less than starting a thread does (a small model's few rows: a
  // feature's hash counted as 8 multiply-adds).
  if (batch * (8 * features + multiplyAddsPerRow()) >= kWorkAhead)
    startPrefetch(step + 1);
  return "";
}

} // namespace whale
