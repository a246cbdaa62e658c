//===- Allocator.cpp - per-device memory with a limit ---------------------===//

#include "runtime/core/Allocator.h"

#include <algorithm>
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

size_t CachingAllocator::sizeClass(size_t bytes) {
  constexpr size_t kMiB = size_t(1) << 20;
  if (bytes < kMiB)
    return (bytes + 511) / 512 * 512;
  size_t power = kMiB;
  while (power * 2 <= bytes)
    power *= 2;
  size_t granule = power / 8;
  return (bytes + granule - 1) / granule * granule;
}

void *CachingAllocator::rawAllocate(size_t bytes) {
  size_t size = sizeClass(bytes);
  bool capturing;
  {
    std::lock_guard<std::mutex> lock(mutex);
    capturing = hold == Hold::Capturing;
    auto it = freeBlocks.find(size);
    if (it != freeBlocks.end() && !it->second.empty()) {
      void *p = it->second.back();
      it->second.pop_back();
      cached -= size;
      if (capturing)
        holdBlocks.insert(p);
      return p;
    }
  }
  // A capture cannot wait for the device, as emptying the cache would.
  void *p = systemAllocate(size);
  if (!p && !capturing) {
    emptyCache();
    p = systemAllocate(size);
  }
  if (p && capturing) {
    std::lock_guard<std::mutex> lock(mutex);
    holdBlocks.insert(p);
  }
  return p;
}

void CachingAllocator::rawRelease(void *ptr, size_t bytes) {
  size_t size = sizeClass(bytes);
  const size_t cap = std::max<size_t>(static_cast<size_t>(peak()), 64u << 20);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (hold == Hold::Capturing) {
      holdBlocks.insert(ptr);
      freeBlocks[size].push_back(ptr);
      cached += size;
      return;
    }
    if (hold == Hold::Held && holdBlocks.count(ptr)) {
      held.emplace_back(ptr, size);
      heldSize += size;
      return;
    }
    if (cached + size <= cap) {
      freeBlocks[size].push_back(ptr);
      cached += size;
      return;
    }
  }
  systemRelease(ptr, size);
}

void CachingAllocator::emptyCache() {
  std::map<size_t, std::vector<void *>> blocks;
  {
    std::lock_guard<std::mutex> lock(mutex);
    blocks.swap(freeBlocks);
    cached = 0;
  }
  for (auto &[size, list] : blocks)
    for (void *p : list)
      systemRelease(p, size);
}

void CachingAllocator::beginHold() {
  std::lock_guard<std::mutex> lock(mutex);
  hold = Hold::Capturing;
  holdBlocks.clear();
}

void CachingAllocator::endHold() {
  std::lock_guard<std::mutex> lock(mutex);
  if (hold != Hold::Capturing)
    return;
  hold = Hold::Held;
  // The capture's blocks it gave back itself: out of the free lists.
  for (auto &[size, list] : freeBlocks) {
    auto kept = list.begin();
    for (void *p : list) {
      if (holdBlocks.count(p)) {
        held.emplace_back(p, size);
        heldSize += size;
        cached -= size;
      } else {
        *kept++ = p;
      }
    }
    list.erase(kept, list.end());
  }
}

void CachingAllocator::releaseHeld() {
  std::lock_guard<std::mutex> lock(mutex);
  hold = Hold::None;
  holdBlocks.clear();
  for (auto &[p, size] : held) {
    freeBlocks[size].push_back(p);
    cached += size;
  }
  held.clear();
  heldSize = 0;
}

int64_t CachingAllocator::heldBytes() const {
  std::lock_guard<std::mutex> lock(mutex);
  return static_cast<int64_t>(heldSize);
}

int64_t CachingAllocator::cachedBytes() const {
  std::lock_guard<std::mutex> lock(mutex);
  return static_cast<int64_t>(cached);
}

// No step replays once the allocator goes: its held blocks go too.
CachingAllocator::~CachingAllocator() {
  releaseHeld();
  emptyCache();
}

void *CachingAllocator::systemAllocate(size_t bytes) {
  return Allocator::rawAllocate(bytes);
}

void CachingAllocator::systemRelease(void *ptr, size_t bytes) {
  Allocator::rawRelease(ptr, bytes);
}

void *Allocator::rawAllocate(size_t bytes) {
  return std::aligned_alloc(64, bytes);
}

void Allocator::rawRelease(void *ptr, size_t) { std::free(ptr); }

} // namespace whale::rt
