//===- SharedMemoryGroup.h - collectives through a host's shared memory ---===//
//
// The processes of a group that share a host move a collective's data
// through one shared-memory segment of the group's own instead of MPI's
// messages: each member writes its part once into its own buffer there,
// and every member reads what it needs from the others' buffers straight
// into the caller's memory. An all-gather then copies each byte once into
// the segment and once out of it per reader, as MPI's single-copy shared
// memory does, without the transport's staging copy of the whole result;
// a reduction reads every member's copy of its chunk where the member
// wrote it.
//
// The caller's memory is read and written by this process alone, during
// the call: a member that comes late, after another gave up on the
// collective, writes only into its own buffer in the segment. So the
// transport keeps the safety its MPI staging buffers give (a given-up
// collective never writes the caller's memory afterwards) without their
// copy.
//
// Data moves in rounds of at most `bufferBytes` per member, through two
// buffers per member used in turn: a member fills one while the others
// still read the other. Round r's buffer may be written once every member
// has taken round r - 2 (`taken`), and read once its writer has posted
// round r (`posted`); both are counters in the segment, one cache line
// each, written by their member only.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_COMM_SHAREDMEMORYGROUP_H
#define WHALE_RUNTIME_COMM_SHAREDMEMORYGROUP_H

#include "runtime/core/Status.h"
#include "runtime/core/Tensor.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace whale::rt {

class SharedMemoryGroup {
public:
  /// Bytes a member moves per round. Small enough that a round's data is
  /// still in the cache when its readers copy it; where a host runs more
  /// processes than it has cores, a round waits for a descheduled member's
  /// turn, and fewer, larger rounds win (measured, docs/distributed.md).
  static constexpr int64_t kBufferBytes = int64_t(1) << 20;
  static constexpr int64_t kOversubscribedBufferBytes = int64_t(4) << 20;

  /// Blocks until `ready()` holds, or gives up (a timeout, an abort) with
  /// the status the collective returns.
  using Wait = std::function<Status(const std::function<bool()> &ready)>;

  /// Maps the segment `name` (a POSIX shared-memory name, "/..."), made by
  /// whichever member of the `members` comes first (all give the same
  /// `bufferBytes`; a new segment is zeros); null with `error` when it
  /// cannot be made or its memory cannot be reserved.
  static std::unique_ptr<SharedMemoryGroup> open(const std::string &name,
                                                 int members, int position,
                                                 int64_t bufferBytes,
                                                 std::string &error);
  ~SharedMemoryGroup();
  SharedMemoryGroup(const SharedMemoryGroup &) = delete;
  SharedMemoryGroup &operator=(const SharedMemoryGroup &) = delete;

  /// Removes the segment's name once every member has mapped it (the
  /// mappings live on): nothing is left behind when a process dies.
  void unlink();

  /// Member k's part (bytes[k] bytes) to out + at[k] on every member; this
  /// member's part is read from `mine` (which may be out + at[position]).
  Status gather(const void *mine, void *out, const std::vector<int64_t> &bytes,
                const std::vector<int64_t> &at, const Wait &wait);

  /// Member k gets in `sum` the sum of every member's chunk k (len[k]
  /// elements from element at[k] of the member's `in`), added in group
  /// order: the same bits as the in-process transport. `sum` may be this
  /// member's own chunk in `in`.
  Status reduce(DType dtype, const void *in, const std::vector<int64_t> &len,
                const std::vector<int64_t> &at, void *sum, const Wait &wait);

  /// reduce, and then every member gets every chunk's sum in `data` (an
  /// all-reduce in place): each round also carries the sums of the round
  /// before, so a sum is read back while it is still in the cache, and the
  /// whole takes one round more than the reduction alone.
  Status allReduce(DType dtype, void *data, const std::vector<int64_t> &len,
                   const std::vector<int64_t> &at, const Wait &wait);

  /// A collective over the group gave up: the members' rounds no longer
  /// agree, and every later one is refused.
  bool broken() const { return isBroken; }

private:
  SharedMemoryGroup(std::string name, int members, int position,
                    int64_t bufferBytes, char *base, size_t size);
  char *buffer(int member, uint64_t round) const;
  /// One round: `post` fills this member's buffer, then `take` reads every
  /// member's (null for this member's own) once all have posted.
  Status
  round(const std::function<void(char *mine)> &post,
        const std::function<void(const std::vector<const char *> &)> &take,
        const Wait &wait);

  /// reduce, and with `whole` (then `in` itself) allReduce.
  Status sumRounds(DType dtype, const void *in, const std::vector<int64_t> &len,
                   const std::vector<int64_t> &at, void *sum, void *whole,
                   const Wait &wait);

  std::string name;
  int members, position;
  int64_t bufferBytes;
  char *base;
  size_t size;
  uint64_t rounds = 0;
  bool isBroken = false, unlinked = false;
};

} // namespace whale::rt

#endif // WHALE_RUNTIME_COMM_SHAREDMEMORYGROUP_H
