//===- HostBuffers.cpp - host staging memory reused from call to call -----===//

#include "runtime/core/HostBuffers.h"

#include <cstdlib>
#include <new>

namespace whale::rt {

struct HostBuffers::Shelf {
  std::mutex mutex;
  /// Free blocks by capacity.
  std::multimap<size_t, std::unique_ptr<char, Block::Free>> free;
  size_t kept = 0, keep = 0;
};

void HostBuffers::Block::Free::operator()(char *p) const { std::free(p); }

void HostBuffers::Block::giveBack() {
  if (!bytes)
    return;
  if (shelf) {
    std::lock_guard<std::mutex> lock(shelf->mutex);
    if (shelf->kept + capacity <= shelf->keep) {
      shelf->kept += capacity;
      shelf->free.emplace(capacity, std::move(bytes));
    }
  }
  bytes.reset();
  shelf.reset();
}

HostBuffers::HostBuffers(size_t keep) : shelf(std::make_shared<Shelf>()) {
  shelf->keep = keep;
}

HostBuffers::Block HostBuffers::take(size_t bytes) {
  Block b;
  b.shelf = shelf;
  b.size = bytes;
  {
    std::lock_guard<std::mutex> lock(shelf->mutex);
    // Not a block more than twice the size: a small request would hold
    // a large block the next large one then misses.
    auto it = shelf->free.lower_bound(bytes);
    if (it != shelf->free.end() && it->first <= 2 * bytes + 4096) {
      b.capacity = it->first;
      b.bytes = std::move(it->second);
      shelf->kept -= it->first;
      shelf->free.erase(it);
      return b;
    }
  }
  // Rounded to 64 bytes (aligned_alloc's rule); at least 64, so an empty
  // request has an address of its own.
  b.capacity = bytes < 64 ? 64 : (bytes + 63) / 64 * 64;
  b.bytes.reset(static_cast<char *>(std::aligned_alloc(64, b.capacity)));
  if (!b.bytes)
    throw std::bad_alloc();
  return b;
}

size_t HostBuffers::kept() const {
  std::lock_guard<std::mutex> lock(shelf->mutex);
  return shelf->kept;
}

} // namespace whale::rt
