//===- whale/Job.h - a model's train step driven by the host -----*- C++
//-*-===//
//
// A compiled train step on this CPU that the host feeds: each step takes
// the host's own batch (one buffer per model input), and between steps the
// host reads and writes parameters by name, saves and loads checkpoints,
// and reads what each step did. train() instead feeds the script's data
// source; both run the same step.
//
//   whale::Interpreter interp;
//   interp.loadFile("mlp.whl");
//   std::string error;
//   std::unique_ptr<whale::Job> job = whale::Job::create(interp, {}, error);
//   const void *batch[] = {x, y};
//   if (!job->step(batch, error)) ...
//   double loss = job->lastStep().loss;
//
// A job owns its copy of the program: the interpreter may load another
// script or go away while the job lives. A job belongs to one thread at a
// time; separate jobs run side by side.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_JOB_H
#define WHALE_JOB_H

#include "whale/Interpreter.h"
#include "whale/Train.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace whale {

struct JobOptions {
  std::string model; ///< empty: the first model with a train block
  /// Rows of each step's inputs; the train block's batch when unset.
  std::optional<int64_t> batch;
  /// The run's length, which the learning-rate schedule follows; the train
  /// block's steps when unset. Steps past it keep the schedule's last rate.
  std::optional<int64_t> steps;
  std::optional<uint64_t> seed; ///< parameter initialization; the block's
  int threads = 0;              ///< 0: every core
  /// Chains of elementwise ops run as generated kernels (fused regions).
  bool fuse = true;
  /// Activations stored in bf16, parameters fp32 masters (issue 55,
  /// in progress): every op computes in fp32 between casts until it has a
  /// bf16 kernel, so this is slower, not faster, for now. One device only.
  bool ampStorage = false;
};

class Job {
public:
  /// Compiles the loaded script's model (`options.model`) and makes its
  /// parameters with their initial values. Null with `error` set when the
  /// script has no such model or train block, or compiling fails.
  static std::unique_ptr<Job>
  create(Interpreter &interp, const JobOptions &options, std::string &error);
  ~Job();
  Job(const Job &) = delete;
  Job &operator=(const Job &) = delete;

  const std::string &model() const;
  /// The model's inputs in order, at this job's batch.
  const std::vector<TensorInfo> &inputs() const;
  /// Every trained parameter, in the order checkpoints list them.
  const std::vector<TensorInfo> &parameters() const;

  /// One training step on `inputs`: one buffer per input, row-major in the
  /// input's shape and dtype, read during the call only. A buffer aligned
  /// to 64 bytes is read in place; any other is copied first. False with
  /// `error` for a non-finite loss (naming the op that made it when
  /// tracing) or a runtime failure; the parameters may then be partly
  /// updated.
  bool step(const void *const *inputs, std::string &error);
  /// Steps taken, counting those of a loaded checkpoint.
  int64_t stepsDone() const;
  /// The last step's loss, samples/s and time (all zero before one).
  const StepReport &lastStep() const;
  /// Input bytes copied because a buffer was not aligned (zero-copy
  /// otherwise), over the job's life.
  int64_t copiedInputBytes() const;

  /// Copies parameter `name` (`count` floats, its elements) out of the job
  /// or into it. False with `error` for an unknown name or a wrong count.
  bool readParameter(const std::string &name, float *out, int64_t count,
                     std::string &error) const;
  bool writeParameter(const std::string &name, const float *values,
                      int64_t count, std::string &error);

  /// Writes the parameters, optimizer state and step to a checkpoint
  /// (docs/reliability.md), or resumes from one of this model.
  bool save(const std::string &path, std::string &error) const;
  bool load(const std::string &path, std::string &error);

  struct Impl;

private:
  /// train() feeds a job from the script's data source (or the host's).
  friend struct Training::Impl;
  explicit Job(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace whale

#endif
