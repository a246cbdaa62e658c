//===- SyntheticSource.h - synthetic(...): a task with a known answer -*- C++
//-*-===//
//
// Features uniform in [-1, 1), labels the argmax of a fixed random linear
// teacher over the classes of the cross entropy that reads them. Sample i
// is a pure function of the seed and i, the same for every plan and run.
//
// The source must never be a step's bottleneck (issue 92 item 19: the
// 100,000-class example spent minutes a step re-deriving the teacher by a
// hash for every sample, feature and class):
// - the teacher is made once, at the first batch. Up to kDenseTeacher
//   weights it is the dense F x C matrix of hashed values (the labels every
//   run before had); beyond, the product of two hashed factors F x R and
//   R x C (R = kTeacherRank), so a batch costs B (F + C) R, far below the
//   model's forward over the same classes;
// - a batch's rows are labelled on the machine's threads (a pool of its
//   own, rt::ThreadPool);
// - the next step's batch is made in the background while the step runs,
//   so a step waits only for a copy (a batch cheaper than starting a
//   thread is made in line).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_RUN_SYNTHETICSOURCE_H
#define WHALE_RUNTIME_RUN_SYNTHETICSOURCE_H

#include "runtime/core/ThreadPool.h"
#include "runtime/run/DataSource.h"

#include <memory>
#include <thread>

namespace whale {

class SyntheticSource : public DataSource {
public:
  /// Teachers of at most this many weights are dense (64 MiB of floats).
  static constexpr int64_t kDenseTeacher = int64_t(1) << 24;
  /// The rank of a larger teacher.
  static constexpr int64_t kTeacherRank = 64;
  /// Multiply-adds worth a thread of the pool.
  static constexpr int64_t kWorkPerThread = int64_t(1) << 20;
  /// Multiply-adds worth starting a thread for the next batch (about 50 us):
  /// a batch of fewer is made in line.
  static constexpr int64_t kWorkAhead = int64_t(1) << 16;

  SyntheticSource(uint64_t seed, int64_t batch, int64_t features,
                  int64_t classes);
  ~SyntheticSource() override;

  std::string fill(int64_t step,
                   std::vector<whale_rt_tensor *> &inputs) override;
  std::vector<int64_t> samples(int64_t step) override;
  int64_t epochSamples() const override { return 0; }

  /// Step `step`'s features [batch, features] and labels [batch], as fill
  /// writes them (for tests and benchmarks).
  void make(int64_t step, std::vector<float> &x, std::vector<int32_t> &y);

private:
  struct Batch {
    int64_t step = -1;
    std::vector<float> x;
    std::vector<int32_t> y;
  };
  rt::ThreadPool &workers();
  int64_t multiplyAddsPerRow() const;
  void makeTeacher();
  /// Labels rows [begin, end) of `x` into `y`.
  void label(const float *x, int32_t *y, int64_t begin, int64_t end) const;
  void startPrefetch(int64_t step);

  uint64_t key, teacherKey;
  int64_t batch, features, classes;
  /// Dense: [features, classes]; low rank: [features, R] then [R, classes].
  std::vector<float> teacher, factor;
  bool teacherMade = false;
  Batch next;
  std::unique_ptr<rt::ThreadPool> pool; ///< the machine's threads, made once
  std::thread prefetch;
};

} // namespace whale

#endif
