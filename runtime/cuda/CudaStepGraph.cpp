//===- CudaStepGraph.cpp - a train step as one CUDA graph -----------------===//

#include "runtime/cuda/CudaStepGraph.h"

#include <cstring>

namespace whale::rt::cuda {

namespace {

/// Room for the per-step arguments of one step: Adam's scalars are 36
/// bytes a launch of 32 parameters, a dropout's draw 40 bytes.
constexpr size_t kArgBytes = 64 << 10;
constexpr size_t kArgAlign = 16;
/// Captured ops that check ids or labels (embeddings, losses, one-hots).
constexpr size_t kChecks = 512;

} // namespace

Status dataErrorStatus(const DataError &found, const char *what,
                       int64_t limit) {
  if (found.position < 0)
    return Status::ok();
  return Status::invalid(std::string(what) + " " + std::to_string(found.value) +
                         " at position " + std::to_string(found.position) +
                         " is outside [0, " + std::to_string(limit) + ")");
}

CudaStepGraph::~CudaStepGraph() {
  drop();
  if (replayed)
    cudaEventDestroy(replayed);
  if (hostArgs)
    cudaFreeHost(hostArgs);
  if (deviceArgs)
    cudaFree(deviceArgs);
  if (hostChecks)
    cudaFreeHost(hostChecks);
  if (deviceChecks)
    cudaFree(deviceChecks);
}

Status CudaStepGraph::failed(cudaError_t e, const std::string &what) {
  if (e == cudaSuccess)
    return Status::ok();
  return Status::internal(name + ": " + what + ": " + cudaGetErrorString(e));
}

Status CudaStepGraph::arenas() {
  // Made before the capture: pinned memory and cudaMalloc of a new size
  // wait for the device.
  if (!hostArgs)
    if (Status st = failed(cudaMallocHost(&hostArgs, kArgBytes),
                           "pinned memory for a step's arguments");
        !st)
      return st;
  if (!deviceArgs)
    if (Status st = failed(cudaMalloc(&deviceArgs, kArgBytes),
                           "device memory for a step's arguments");
        !st)
      return st;
  const size_t checkBytes = kChecks * sizeof(DataError);
  if (!hostChecks)
    if (Status st = failed(cudaMallocHost(&hostChecks, checkBytes),
                           "pinned memory for a step's data checks");
        !st)
      return st;
  if (!deviceChecks)
    if (Status st = failed(cudaMalloc(&deviceChecks, checkBytes),
                           "device memory for a step's data checks");
        !st)
      return st;
  if (!replayed)
    return failed(cudaEventCreateWithFlags(&replayed, cudaEventDisableTiming),
                  "cudaEventCreate");
  return Status::ok();
}

Status CudaStepGraph::begin() {
  drop();
  why.clear();
  if (Status st = arenas(); !st)
    return st;
  argsUsed = 0;
  refreshers.clear();
  checks.clear();
  memory.beginHold();
  if (Status st =
          failed(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed),
                 "starting to capture the step");
      !st) {
    memory.releaseHeld();
    return st;
  }
  active = true;
  return Status::ok();
}

Status CudaStepGraph::hostWait(const std::string &what) {
  return cannotHold(what + " waits for the GPU");
}

Status CudaStepGraph::cannotHold(const std::string &reason) {
  if (active) {
    if (why.empty())
      why = reason;
    return Status::invalid(name + ": " + reason +
                           ", which a captured step cannot");
  }
  if (probing && why.empty())
    why = reason;
  return Status::ok();
}

Status CudaStepGraph::live(const void *now, size_t bytes, Refresh at,
                           const void **out) {
  *out = nullptr;
  if (!active)
    return Status::ok();
  const size_t at0 = (argsUsed + kArgAlign - 1) / kArgAlign * kArgAlign;
  if (at0 + bytes > kArgBytes) {
    if (why.empty())
      why = "more than " + std::to_string(kArgBytes) +
            " bytes of arguments change from step to step";
    return Status::invalid(name + ": " + why);
  }
  argsUsed = at0 + bytes;
  char *host = hostArgs + at0;
  std::memcpy(host, now, bytes);
  if (Status st = failed(cudaMemcpyAsync(deviceArgs + at0, host, bytes,
                                         cudaMemcpyHostToDevice, stream),
                         "copying a step's argument");
      !st)
    return st;
  refreshers.push_back(
      [host, at = std::move(at)](const TrainState &s) { at(s, host); });
  *out = deviceArgs + at0;
  return Status::ok();
}

Status CudaStepGraph::checkSlot(DataError *shared, DataError **out) {
  *out = shared;
  if (!active)
    return Status::ok();
  if (checks.size() == kChecks) {
    if (why.empty())
      why = "more than " + std::to_string(kChecks) + " ops check ids or labels";
    return Status::invalid(name + ": " + why);
  }
  *out = deviceChecks + checks.size();
  checks.push_back({"", 0});
  return Status::ok();
}

void CudaStepGraph::deferCheck(const char *what, int64_t limit) {
  if (active && !checks.empty())
    checks.back() = {what, limit};
}

Status CudaStepGraph::end(CapturedStep &held) {
  held = {};
  if (!active)
    return Status::invalid(name + ": no step is being captured");
  // The checks' records reach the host at the step's end, then the side
  // streams rejoin: a capture ends on the stream it began on.
  Status st = Status::ok();
  if (!checks.empty())
    st = failed(cudaMemcpyAsync(hostChecks, deviceChecks,
                                checks.size() * sizeof(DataError),
                                cudaMemcpyDeviceToHost, stream),
                "copying the step's data checks");
  if (st)
    st = join();
  active = false;
  cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (st)
    st = failed(ended, "ending the step's capture");
  if (st)
    st = failed(cudaGraphInstantiate(&exec, graph, 0),
                "instantiating the step's graph");
  size_t count = 0;
  if (st)
    st = failed(cudaGraphGetNodes(graph, nullptr, &count),
                "counting the step's graph nodes");
  std::vector<cudaGraphNode_t> nodes(count);
  if (st && count > 0)
    st = failed(cudaGraphGetNodes(graph, nodes.data(), &count),
                "listing the step's graph nodes");
  if (!st) {
    if (why.empty())
      why = st.message();
    drop();
    return st;
  }
  memory.endHold();
  held.operations = static_cast<int64_t>(count);
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    if (cudaGraphNodeGetType(node, &type) != cudaSuccess)
      continue;
    held.kernels += type == cudaGraphNodeTypeKernel;
    held.copies += type == cudaGraphNodeTypeMemcpy;
    held.fills += type == cudaGraphNodeTypeMemset;
  }
  return Status::ok();
}

Status CudaStepGraph::replay(const TrainState &state) {
  if (!exec)
    return Status::invalid(name + ": no captured step to replay");
  // The last replay may still copy this arena's arguments to the device.
  if (replayPending)
    if (Status st = failed(cudaEventSynchronize(replayed),
                           "waiting for the last replay");
        !st)
      return st;
  for (const auto &refresh : refreshers)
    refresh(state);
  Status st = failed(cudaGraphLaunch(exec, stream), "replaying the step");
  if (st)
    st = failed(cudaEventRecord(replayed, stream), "cudaEventRecord");
  if (!st)
    return st;
  replayPending = true;
  if (checks.empty())
    return Status::ok();
  // The ids and labels were checked on the device: wait for the records.
  if (Status waited = failed(cudaEventSynchronize(replayed),
                             "waiting for the step's data checks");
      !waited)
    return waited;
  replayPending = false;
  for (size_t i = 0; i < checks.size(); ++i)
    if (Status found =
            dataErrorStatus(hostChecks[i], checks[i].what, checks[i].limit);
        !found)
      return found;
  return Status::ok();
}

void CudaStepGraph::drop() {
  if (active) {
    cudaGraph_t abandoned = nullptr;
    cudaStreamEndCapture(stream, &abandoned);
    if (abandoned)
      cudaGraphDestroy(abandoned);
    cudaGetLastError(); // a broken capture's error is not the next op's
    active = false;
  }
  if (exec || graph) {
    // The held memory goes back to the free lists only once no replay
    // writes to it.
    cudaStreamSynchronize(stream);
    replayPending = false;
  }
  if (exec)
    cudaGraphExecDestroy(exec);
  if (graph)
    cudaGraphDestroy(graph);
  exec = nullptr;
  graph = nullptr;
  refreshers.clear();
  checks.clear();
  memory.releaseHeld();
}

} // namespace whale::rt::cuda
