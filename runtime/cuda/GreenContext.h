//===- GreenContext.h - a device on a share of a GPU's SMs -------*- C++
//-*-===//
//
// cuda:N@sms=K runs on K of GPU N's SMs: a CUDA green context (CUDA 12.4
// and later drivers) holds them, and every stream the device makes comes
// from it, so its kernels, cuBLAS calls and NCCL collectives run there
// only. Memory stays the GPU's own (the primary context's), which a green
// context shares. Several shares of one GPU in a process take disjoint SMs
// (SmShare.h); a share's SMs are free again once its device closes.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CUDA_GREENCONTEXT_H
#define WHALE_RUNTIME_CUDA_GREENCONTEXT_H

#include "runtime/core/Status.h"

#include <cuda.h>
#include <cuda_runtime.h>

#include <memory>
#include <string>

namespace whale::rt::cuda {

class GreenContext {
public:
  /// `sms` SMs of GPU `ordinal` for the device `device` (named in errors),
  /// or why not: a driver without green contexts, a count the GPU does
  /// not group its SMs in, or too few SMs left by the other shares.
  static Status open(const std::string &device, int ordinal, int sms,
                     std::unique_ptr<GreenContext> &out);
  ~GreenContext();
  GreenContext(const GreenContext &) = delete;
  GreenContext &operator=(const GreenContext &) = delete;

  /// A non-blocking stream on this share's SMs.
  Status newStream(cudaStream_t &out, const std::string &what) const;

private:
  GreenContext() = default;
  std::string device;
  int ordinal = 0;
  CUgreenCtx context = nullptr;
  CUdevResource held{}; ///< its SMs, given back when it closes
};

} // namespace whale::rt::cuda

#endif
