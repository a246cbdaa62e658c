//===- SharedMemoryGroup.cpp - collectives through a host's shared memory -===//

#include "runtime/comm/SharedMemoryGroup.h"
#include "runtime/comm/Communicator.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace whale::rt {
namespace {

using Counter = std::atomic<uint64_t>;
static_assert(Counter::is_always_lock_free,
              "the round counters are shared between processes");

/// Each member's counters: `posted` and `taken` on cache lines of their
/// own, so a member's polls of one do not pull the other away from it.
constexpr size_t kLine = 64;
constexpr size_t kHeaderBytes = 2 * kLine;

size_t segmentBytes(int members, int64_t bufferBytes) {
  return size_t(members) * (kHeaderBytes + 2 * size_t(bufferBytes));
}

Counter &posted(char *base, int member) {
  return *reinterpret_cast<Counter *>(base + size_t(member) * kHeaderBytes);
}
Counter &taken(char *base, int member) {
  return *reinterpret_cast<Counter *>(base + size_t(member) * kHeaderBytes +
                                      kLine);
}
void copyBytes(void *to, const void *from, int64_t bytes) {
  if (bytes > 0 && to != from)
    std::memcpy(to, from, static_cast<size_t>(bytes));
}

} // namespace

std::unique_ptr<SharedMemoryGroup>
SharedMemoryGroup::open(const std::string &name, int members, int position,
                        int64_t bufferBytes, std::string &error) {
  if (members < 2 || position < 0 || position >= members) {
    error = "a shared-memory group needs two members or more";
    return nullptr;
  }
  if (bufferBytes < 64 * members) {
    error = "a shared-memory group's buffers hold 64 bytes a member at least";
    return nullptr;
  }
  const size_t size = segmentBytes(members, bufferBytes);
  int fd = shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
  if (fd < 0) {
    error = "shm_open " + name + ": " + std::strerror(errno);
    return nullptr;
  }
  // Every member sets the same size: the first makes the zeros, the rest
  // change nothing. The pages are reserved now, so that a full /dev/shm is
  // this error and not a SIGBUS at the first collective.
  int rc = ftruncate(fd, static_cast<off_t>(size));
  if (rc == 0)
    rc = posix_fallocate(fd, 0, static_cast<off_t>(size));
  else
    rc = errno;
  if (rc != 0) {
    error = "reserving " + std::to_string(size) + " bytes of shared memory (" +
            name + "): " + std::strerror(rc);
    ::close(fd);
    return nullptr;
  }
  void *base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) {
    error = "mapping " + name + ": " + std::strerror(errno);
    return nullptr;
  }
  return std::unique_ptr<SharedMemoryGroup>(new SharedMemoryGroup(
      name, members, position, bufferBytes, static_cast<char *>(base), size));
}

SharedMemoryGroup::SharedMemoryGroup(std::string name, int members,
                                     int position, int64_t bufferBytes,
                                     char *base, size_t size)
    : name(std::move(name)), members(members), position(position),
      bufferBytes(bufferBytes), base(base), size(size) {}

/// Member `member`'s buffer for round `r`.
char *SharedMemoryGroup::buffer(int member, uint64_t r) const {
  return base + size_t(members) * kHeaderBytes +
         (size_t(member) * 2 + r % 2) * size_t(bufferBytes);
}

SharedMemoryGroup::~SharedMemoryGroup() { munmap(base, size); }

void SharedMemoryGroup::unlink() {
  if (!unlinked)
    shm_unlink(name.c_str());
  unlinked = true;
}

Status SharedMemoryGroup::round(
    const std::function<void(char *mine)> &post,
    const std::function<void(const std::vector<const char *> &)> &take,
    const Wait &wait) {
  if (isBroken)
    return Status::internal("an earlier collective over this group gave up");
  const uint64_t r = ++rounds;
  // This member's buffer for round r held round r - 2: free once every
  // member has taken that round.
  if (r > 2) {
    Status st = wait([&] {
      for (int q = 0; q < members; ++q)
        if (taken(base, q).load(std::memory_order_acquire) < r - 2)
          return false;
      return true;
    });
    if (!st) {
      isBroken = true;
      return st;
    }
  }
  post(buffer(position, r));
  posted(base, position).store(r, std::memory_order_release);
  Status st = wait([&] {
    for (int q = 0; q < members; ++q)
      if (posted(base, q).load(std::memory_order_acquire) < r)
        return false;
    return true;
  });
  if (!st) {
    isBroken = true;
    return st;
  }
  std::vector<const char *> buffers(static_cast<size_t>(members), nullptr);
  for (int q = 0; q < members; ++q)
    if (q != position)
      buffers[q] = buffer(q, r);
  take(buffers);
  taken(base, position).store(r, std::memory_order_release);
  return Status::ok();
}

Status SharedMemoryGroup::gather(const void *mine, void *out,
                                 const std::vector<int64_t> &bytes,
                                 const std::vector<int64_t> &at,
                                 const Wait &wait) {
  char *to = static_cast<char *>(out);
  const char *own = static_cast<const char *>(mine);
  copyBytes(to + at[position], own, bytes[position]);
  const int64_t most = *std::max_element(bytes.begin(), bytes.end());
  for (int64_t from = 0; from < most; from += bufferBytes) {
    // Piece [from, from + bufferBytes) of every member's part.
    auto piece = [&](int k) {
      return std::clamp<int64_t>(bytes[k] - from, 0, bufferBytes);
    };
    Status st =
        round([&](char *buf) { copyBytes(buf, own + from, piece(position)); },
              [&](const std::vector<const char *> &buffers) {
                for (int k = 0; k < members; ++k)
                  if (k != position)
                    copyBytes(to + at[k] + from, buffers[k], piece(k));
              },
              wait);
    if (!st)
      return st;
  }
  return Status::ok();
}

Status SharedMemoryGroup::reduce(DType dtype, const void *in,
                                 const std::vector<int64_t> &len,
                                 const std::vector<int64_t> &at, void *sum,
                                 const Wait &wait) {
  return sumRounds(dtype, in, len, at, sum, /*whole=*/nullptr, wait);
}

Status SharedMemoryGroup::allReduce(DType dtype, void *data,
                                    const std::vector<int64_t> &len,
                                    const std::vector<int64_t> &at,
                                    const Wait &wait) {
  char *sum = static_cast<char *>(data) + at[position] * dtypeSize(dtype);
  return sumRounds(dtype, data, len, at, sum, data, wait);
}

Status SharedMemoryGroup::sumRounds(DType dtype, const void *in,
                                    const std::vector<int64_t> &len,
                                    const std::vector<int64_t> &at, void *sum,
                                    void *whole, const Wait &wait) {
  const int64_t esz = dtypeSize(dtype);
  // Each member's buffer holds a slot for every member: in slot k (another
  // member's) the piece of chunk k that member sums this round; in its own
  // slot, when gathering, the piece of its sum it made the round before.
  const int64_t slot = bufferBytes / members / esz; // elements
  const char *data = static_cast<const char *>(in);
  char *result = static_cast<char *>(sum);
  // Gathering, chunk k's sum lands at at[k] of `whole`.
  const bool gather = whole != nullptr;
  const int64_t most = *std::max_element(len.begin(), len.end());
  const int64_t pieces = (most + slot - 1) / slot;
  for (int64_t i = 0; i < pieces + (gather && pieces > 0 ? 1 : 0); ++i) {
    const int64_t from = i * slot;
    // Elements of chunk k in piece j.
    auto piece = [&](int k, int64_t j) {
      return std::clamp<int64_t>(len[k] - j * slot, 0, slot);
    };
    const bool summing = i < pieces, sharing = gather && i > 0;
    Status st = round(
        [&](char *buf) {
          for (int k = 0; k < members; ++k)
            if (k != position && summing)
              copyBytes(buf + k * slot * esz, data + (at[k] + from) * esz,
                        piece(k, i) * esz);
          if (sharing)
            copyBytes(buf + position * slot * esz, result + (from - slot) * esz,
                      piece(position, i - 1) * esz);
        },
        [&](const std::vector<const char *> &buffers) {
          if (summing) {
            std::vector<const void *> ins(static_cast<size_t>(members));
            for (int q = 0; q < members; ++q)
              ins[q] = q == position ? data + (at[position] + from) * esz
                                     : buffers[q] + position * slot * esz;
            sumInGroupOrder(dtype, result + from * esz, ins, 0,
                            piece(position, i));
          }
          if (sharing)
            for (int k = 0; k < members; ++k)
              if (k != position)
                copyBytes(static_cast<char *>(whole) +
                              (at[k] + from - slot) * esz,
                          buffers[k] + k * slot * esz, piece(k, i - 1) * esz);
        },
        wait);
    if (!st)
      return st;
  }
  return Status::ok();
}

} // namespace whale::rt
