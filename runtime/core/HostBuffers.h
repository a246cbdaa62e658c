//===- HostBuffers.h - host staging memory reused from call to call -*- C++
//-*-===//
//
// Collectives stage their data in host memory: a bucket packed for its
// all-reduce, an all-to-all's send and receive slots, an all-gather's
// parts. A step asks for the same sizes every time, and a buffer of a few
// megabytes that is allocated and freed each call goes back to the system
// on free and faults in again on first touch: a page fault every 4 KiB,
// zeroed by the kernel, every call (the expert-parallel plan of
// bench/sim_accuracy.py took 9,000 faults a step, a quarter of its step).
// A pool keeps what was given back and hands it out again, its contents
// left as they were: callers write every byte they read.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CORE_HOSTBUFFERS_H
#define WHALE_RUNTIME_CORE_HOSTBUFFERS_H

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

namespace whale::rt {

/// A pool of host blocks. Thread-safe; a block may be given back from any
/// thread, and after the pool itself is gone (the shelf the blocks go back
/// to lives until its last block, then frees them all).
class HostBuffers {
  struct Shelf;

public:
  /// A block of at least the bytes asked for, 64-byte aligned, its
  /// contents undefined; back on the pool's shelf when it goes.
  class Block {
  public:
    Block() = default;
    Block(Block &&) = default;
    Block &operator=(Block &&other) {
      if (this != &other) {
        giveBack();
        shelf = std::move(other.shelf);
        bytes = std::move(other.bytes);
        capacity = other.capacity;
        size = other.size;
      }
      return *this;
    }
    ~Block() { giveBack(); }

    char *data() { return bytes.get(); }
    template <class T> T *as() { return reinterpret_cast<T *>(bytes.get()); }
    /// The bytes asked for (the block may hold more).
    size_t bytesAsked() const { return size; }

  private:
    friend class HostBuffers;
    struct Free {
      void operator()(char *p) const;
    };
    void giveBack();
    std::shared_ptr<Shelf> shelf;
    std::unique_ptr<char, Free> bytes;
    size_t capacity = 0, size = 0;
  };

  /// At most `keep` bytes of free blocks stay on the shelf; past that a
  /// block given back goes to the system.
  explicit HostBuffers(size_t keep = size_t(1) << 30);

  /// The smallest free block that holds `bytes` (and is at most about
  /// twice that), else a new one.
  Block take(size_t bytes);
  /// Bytes of free blocks on the shelf.
  size_t kept() const;

private:
  std::shared_ptr<Shelf> shelf;
};

} // namespace whale::rt

#endif
