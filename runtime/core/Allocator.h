//===- Allocator.h - per-device memory with a limit --------------*- C++
//-*-===//

#ifndef WHALE_RUNTIME_CORE_ALLOCATOR_H
#define WHALE_RUNTIME_CORE_ALLOCATOR_H

#include "runtime/core/Status.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

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

/// Keeps freed blocks for reuse. A training step makes and frees the same
/// sizes every step, and asking the system each time costs a page fault
/// per page on the CPU (glibc maps large blocks afresh and unmaps them on
/// free: a quarter of a two-rank step here) and a device-wide
/// synchronization on a GPU. A freed block goes to a free list by size
/// class and serves the next request of its class, the most recently freed
/// first (its lines may still be in the caches). The cache holds at most
/// the peak of what was in use (at least 64 MiB); past that, freed blocks
/// go back to the system. When the system refuses a request, the cache is
/// emptied and the request tried once more.
class CachingAllocator : public Allocator {
public:
  using Allocator::Allocator;
  ~CachingAllocator() override;

  /// Hands every cached block back to the system.
  void emptyCache();

  /// A captured step's memory (runtime/core/StepCapture.h). From beginHold
  /// to endHold every block handed out or given back is the capture's, and
  /// given-back blocks are always kept (the system's release waits for the
  /// device, which a capture cannot). The replays write to those blocks,
  /// so after endHold one given back (by the capture or later) is set
  /// aside, out of the free lists, until releaseHeld: when the captured
  /// step is gone.
  void beginHold();
  void endHold();
  void releaseHeld();
  /// The bytes set aside for a captured step.
  int64_t heldBytes() const;
  int64_t cachedBytes() const;
  /// The size class of a request: 512-byte granules below 1 MiB, above it
  /// eight classes per power of two (at most 12.5% lost to rounding).
  static size_t sizeClass(size_t bytes);

protected:
  void *rawAllocate(size_t bytes) final;
  void rawRelease(void *ptr, size_t bytes) final;
  /// The system's memory (the base Allocator's aligned host memory by
  /// default). A class that
  /// overrides systemRelease calls releaseHeld and emptyCache in its own
  /// destructor: the base's runs after the override is gone.
  virtual void *systemAllocate(size_t bytes);
  virtual void systemRelease(void *ptr, size_t bytes);

private:
  mutable std::mutex mutex;
  std::map<size_t, std::vector<void *>> freeBlocks; ///< by size class
  size_t cached = 0;
  enum class Hold { None, Capturing, Held } hold = Hold::None;
  std::unordered_set<void *> holdBlocks; ///< every block the capture touched
  std::vector<std::pair<void *, size_t>> held; ///< given back, set aside
  size_t heldSize = 0;
};

/// "1.5 GiB", "512 B": sizes as people read them.
std::string formatBytes(int64_t bytes);

} // namespace whale::rt

#endif
