//===- JobImpl.h - what a Job holds, for train() to drive it -----*- C++
//-*-===//
//
// train() on one device is a Job fed by the script's data source: it reads
// the job's input tensors and runs its steps through this.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_TRAIN_JOBIMPL_H
#define WHALE_LIB_TRAIN_JOBIMPL_H

#include "lib/compile/Jit.h"
#include "lib/compile/LrSchedule.h"
#include "runtime/checkpoint/Checkpoint.h"
#include "whale/Job.h"

#include <memory>

namespace whale {

struct Job::Impl {
  /// The script elaborated at the job's batch: its context holds the train
  /// block's attributes the settings refer to.
  std::unique_ptr<Interpreter> own;
  std::string model;
  TrainSettings settings;
  int64_t batch = 1;
  std::unique_ptr<JitProgram> program;
  JitProgram::Entry entry = nullptr;
  /// The model's forward pass alone: its loss, no update (evaluation).
  JitProgram::Entry forward = nullptr;
  std::unique_ptr<whale_rt_context, void (*)(whale_rt_context *)> ctx{
      nullptr, whale_rt_context_destroy};
  std::vector<TensorInfo> inputInfo, paramInfo;
  std::vector<Parameter> params;
  /// The job's own input tensors, filled by copying (train()'s data source
  /// fills them directly).
  std::vector<whale_rt_tensor *> inputs;
  int64_t done = 0, copied = 0;
  StepReport last;

  /// Runs step done + 1 on `tensors` (one per input) and records it; ""
  /// or what went wrong.
  std::string runStep(whale_rt_tensor *const *tensors, double elapsedBefore);
  /// The mean loss of the forward pass over batches 0 .. steps - 1 of
  /// `source` (the same held-out batches every time), parameters
  /// untouched; "" or what went wrong.
  std::string evaluate(class DataSource &source, int64_t steps, double &loss);
};

} // namespace whale

#endif
