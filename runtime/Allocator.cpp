//===- Allocator.cpp - per-device memory with a limit ---------------------===//

#include "runtime/Allocator.h"

#include <cstdio>
#include <cstdlib>

namespace whale::rt {

std::string formatBytes(int64_t bytes) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[48];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  else
    std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  return buf;
}

Status Allocator::allocate(int64_t bytes, void **out) {
  *out = nullptr;
  if (bytes < 0)
    return Status::invalid("negative allocation of " + std::to_string(bytes) +
                           " bytes on " + device);
  int64_t before = used.fetch_add(bytes);
  if (limit > 0 && before + bytes > limit) {
    used.fetch_sub(bytes);
    return Status::outOfMemory(
        device + ": cannot allocate " + formatBytes(bytes) + " with " +
        formatBytes(before) + " in use; the device's limit is " +
        formatBytes(limit));
  }
  // Aligned for vector loads; at least one byte so zero-sized tensors have
  // a distinct address.
  size_t rounded = (static_cast<size_t>(bytes) + 63) / 64 * 64;
  void *p = rawAllocate(rounded ? rounded : 64);
  if (!p) {
    used.fetch_sub(bytes);
    return Status::outOfMemory(device + ": the system refused " +
                               formatBytes(bytes));
  }
  int64_t now = before + bytes, peak = peakUsed.load();
  while (now > peak && !peakUsed.compare_exchange_weak(peak, now)) {
  }
  *out = p;
  return Status::ok();
}

void Allocator::release(void *ptr, int64_t bytes) {
  if (!ptr)
    return;
  size_t rounded = (static_cast<size_t>(bytes) + 63) / 64 * 64;
  rawRelease(ptr, rounded ? rounded : 64);
  used.fetch_sub(bytes);
}

void *Allocator::rawAllocate(size_t bytes) {
  return std::aligned_alloc(64, bytes);
}

void Allocator::rawRelease(void *ptr, size_t) { std::free(ptr); }

} // namespace whale::rt
