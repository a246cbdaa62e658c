//===- Allocator.h - per-device memory with a limit --------------*- C++
//-*-===//

#ifndef WHALE_RUNTIME_ALLOCATOR_H
#define WHALE_RUNTIME_ALLOCATOR_H

#include "runtime/Status.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace whale::rt {

/// Counts every byte a device holds and refuses a request that would pass
/// its limit, so a plan that does not fit fails with the numbers instead of
/// taking the machine down. Thread-safe. Host memory by default; a device
/// with memory of its own (a GPU) overrides where the bytes come from.
class Allocator {
public:
  /// `limit` in bytes; 0 means no limit.
  Allocator(std::string device, int64_t limit)
      : device(std::move(device)), limit(limit) {}
  virtual ~Allocator() = default;

  /// 64-byte aligned memory for `bytes`, or an OutOfMemory status naming the
  /// device, the request, what is in use and the limit.
  Status allocate(int64_t bytes, void **out);
  void release(void *ptr, int64_t bytes);

  int64_t inUse() const { return used.load(); }
  int64_t peak() const { return peakUsed.load(); }
  int64_t getLimit() const { return limit; }
  const std::string &deviceName() const { return device; }

protected:
  /// `bytes` (> 0, rounded up to 64) of the device's memory, or null.
  virtual void *rawAllocate(size_t bytes);
  virtual void rawRelease(void *ptr, size_t bytes);

private:
  std::string device;
  int64_t limit;
  std::atomic<int64_t> used{0};
  std::atomic<int64_t> peakUsed{0};
};

/// "1.5 GiB", "512 B": sizes as people read them.
std::string formatBytes(int64_t bytes);

} // namespace whale::rt

#endif
