//===- CudaStepGraph.h - a train step as one CUDA graph ----------*- C++
//-*-===//
//
// The CUDA device's StepCapture (runtime/core/StepCapture.h): the compute
// stream is captured in relaxed mode (the allocator may still cudaMalloc a
// block it has never cached), the side streams a step's collectives ran
// on are joined back at its end, and the graph is instantiated once.
//
// Two things a step's ops did on the host move into the graph:
//  - Arguments that change from step to step (Adam's, SGD's, dropout's)
//    live in pinned host memory: the graph copies each to the device
//    before the kernel that reads it, and before each replay the host
//    writes the step's values there (`live`).
//  - Ids and labels out of range. An uncaptured op reads its data-error
//    record at once; a captured one gets a record of its own, the graph
//    copies them all to pinned memory at its end, and the replay reports
//    the first that found something (`checkSlot`, `deferCheck`).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CUDA_CUDASTEPGRAPH_H
#define WHALE_RUNTIME_CUDA_CUDASTEPGRAPH_H

#include "runtime/core/Allocator.h"
#include "runtime/core/StepCapture.h"
#include "runtime/cuda/CudaKernels.h"

#include <cuda_runtime.h>

#include <functional>
#include <string>
#include <vector>

namespace whale::rt::cuda {

/// A data error as a Status: "<what> <value> at position <p> is outside
/// [0, <limit>)", or ok where the record found nothing.
Status dataErrorStatus(const DataError &found, const char *what, int64_t limit);

class CudaStepGraph final : public StepCapture {
public:
  /// Captures `stream` of device `name`, whose blocks come from `memory`;
  /// `join` makes the stream wait for the side streams that joined the
  /// capture (collectives, pipeline sends), as a capture must end.
  CudaStepGraph(std::string name, cudaStream_t &stream,
                CachingAllocator &memory, std::function<Status()> join)
      : name(std::move(name)), stream(stream), memory(memory),
        join(std::move(join)) {}
  ~CudaStepGraph() override;

  void probe(bool on) override { probing = on; }
  const std::string &blocker() const override { return why; }
  Status begin() override;
  bool capturing() const override { return active; }
  Status end(CapturedStep &held) override;
  Status replay(const TrainState &state) override;
  void drop() override;
  /// Whether a captured step is held: its memory must stay where it is.
  bool holding() const { return exec != nullptr; }

  /// Before the host waits for the device in a step (`what`: "a copy to
  /// the host"): while probing, notes it as the step's blocker; while
  /// capturing, refuses it.
  Status hostWait(const std::string &what);
  /// The same for anything else a step's graph cannot hold (`reason`
  /// says what and why).
  Status cannotHold(const std::string &reason);

  /// The device's copy of `bytes` at `now`, refreshed before each replay
  /// by `at` (which writes a replay's value into the pointer it gets);
  /// null, with nothing done, where no capture is under way.
  using Refresh = std::function<void(const TrainState &, void *)>;
  Status live(const void *now, size_t bytes, Refresh at, const void **out);
  template <class T>
  Status live(const T &now, std::function<T(const TrainState &)> at,
              const T **out) {
    const void *p = nullptr;
    Status st = live(
        &now, sizeof(T),
        [at](const TrainState &s, void *into) {
          *static_cast<T *>(into) = at(s);
        },
        &p);
    *out = static_cast<const T *>(p);
    return st;
  }

  /// A data-error record for one captured op (`shared` when not
  /// capturing), and its report after each replay.
  Status checkSlot(DataError *shared, DataError **out);
  void deferCheck(const char *what, int64_t limit);

private:
  Status failed(cudaError_t e, const std::string &what);
  Status arenas();

  std::string name;
  cudaStream_t &stream;
  CachingAllocator &memory;
  std::function<Status()> join;

  bool probing = false, active = false;
  std::string why;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaEvent_t replayed = nullptr; ///< the last replay's end
  bool replayPending = false;

  /// Per-step arguments: pinned host and device arenas, side by side.
  char *hostArgs = nullptr, *deviceArgs = nullptr;
  size_t argsUsed = 0;
  std::vector<std::function<void(const TrainState &)>> refreshers;

  /// Captured ops' data-error records and what each checked.
  DataError *deviceChecks = nullptr, *hostChecks = nullptr;
  struct Check {
    const char *what;
    int64_t limit;
  };
  std::vector<Check> checks;
};

} // namespace whale::rt::cuda

#endif
