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
  std::vector<float> scores(static_cast<size_t>(classes));
  std::vector<float> low(static_cast<size_t>(kTeacherRank));
  for (int64_t b = begin; b < end; ++b) {
    const float *row = x + b * features;
    std::fill(scores.begin(), scores.end(), 0.0f);
    if (factor.empty()) {
      // Each class's score summed over the features in order, as the
      // teacher always summed it: the same labels.
      for (int64_t j = 0; j < features; ++j) {
        const float v = row[j], *w = teacher.data() + j * classes;
        for (int64_t c = 0; c < classes; ++c)
          scores[c] += v * w[c];
      }
    } else {
      std::fill(low.begin(), low.end(), 0.0f);
      for (int64_t j = 0; j < features; ++j) {
        const float v = row[j], *u = teacher.data() + j * kTeacherRank;
        for (int64_t k = 0; k < kTeacherRank; ++k)
          low[k] += v * u[k];
      }
      for (int64_t k = 0; k < kTeacherRank; ++k) {
        const float v = low[k], *w = factor.data() + k * classes;
        for (int64_t c = 0; c < classes; ++c)
          scores[c] += v * w[c];
      }
    }
    y[b] = argmax(scores.data(), classes);
  }
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
