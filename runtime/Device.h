//===- Device.h - a CPU device: threads, memory, a rate ----------*- C++
//-*-===//

#ifndef WHALE_RUNTIME_DEVICE_H
#define WHALE_RUNTIME_DEVICE_H

#include "runtime/Allocator.h"
#include "runtime/ThreadPool.h"

#include <string>

namespace whale::rt {

struct CpuDeviceOptions {
  int threads = 1;
  int64_t memoryLimit = 0; // bytes; 0: no limit
};

/// A CPU device: its own thread pool (kernels parallelize over it, GEMM
/// included, since BLAS runs single-threaded inside each chunk) and its own
/// allocator with a memory limit.
class CpuDevice {
public:
  CpuDevice(std::string name, CpuDeviceOptions options)
      : name_(name), pool_(options.threads),
        allocator_(std::move(name), options.memoryLimit) {}

  const std::string &name() const { return name_; }
  ThreadPool &pool() { return pool_; }
  Allocator &allocator() { return allocator_; }

private:
  std::string name_;
  ThreadPool pool_;
  Allocator allocator_;
};

} // namespace whale::rt

#endif
