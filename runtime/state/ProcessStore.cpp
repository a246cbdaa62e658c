//===- ProcessStore.cpp - the in-memory store's copies across processes ---===//

#include "runtime/state/ProcessStore.h"

#include <algorithm>
#include <cstring>

namespace whale {

namespace {

/// The driver's tag for the store's messages, above the pieces' (2^40) and
/// any a rank program uses. One tag: MPI keeps the order of the messages
/// between two processes, and so does the transport's mailbox.
constexpr int64_t kStoreTag = int64_t(1) << 41;
/// The most bytes one message carries (MPI counts in int).
constexpr int64_t kChunk = int64_t(256) << 20;

void put(std::vector<uint8_t> &out, int64_t v) {
  const size_t at = out.size();
  out.resize(at + sizeof v);
  std::memcpy(out.data() + at, &v, sizeof v);
}

bool take(const std::vector<uint8_t> &in, size_t &at, int64_t &v) {
  if (at + sizeof v > in.size())
    return false;
  std::memcpy(&v, in.data() + at, sizeof v);
  at += sizeof v;
  return true;
}

/// What each box is (its rank, tensor, place and bytes), in `held`'s
/// order: the receiver sizes its buffers from it.
std::vector<uint8_t> describe(const HeldState &held) {
  std::vector<uint8_t> out;
  int64_t boxes = 0;
  for (const auto &entry : held)
    boxes += static_cast<int64_t>(entry.second.size());
  put(out, boxes);
  for (const auto &[key, data] : held)
    for (const auto &[box, bytes] : data) {
      put(out, key.first);
      put(out, static_cast<int64_t>(key.second.size()));
      out.insert(out.end(), key.second.begin(), key.second.end());
      put(out, static_cast<int64_t>(box.offset.size()));
      for (size_t d = 0; d < box.offset.size(); ++d) {
        put(out, box.offset[d]);
        put(out, box.size[d]);
      }
      put(out, static_cast<int64_t>(bytes.size()));
    }
  out.resize((out.size() + 3) / 4 * 4, 0);
  return out;
}

/// Bytes in messages of at most kChunk, each a whole number of words (the
/// transport moves words): a box whose bytes are not goes through a
/// padded copy.
bool sendBytes(whale_rt_comm *comm, int32_t me, int32_t to,
               const std::vector<uint8_t> &bytes) {
  const int64_t n = static_cast<int64_t>(bytes.size());
  for (int64_t at = 0; at < n; at += kChunk) {
    const int64_t k = std::min(kChunk, n - at);
    if (k % 4 == 0) {
      if (whale_rt_comm_driver_send(comm, me, to, kStoreTag,
                                    bytes.data() + at, k) != WHALE_RT_OK)
        return false;
      continue;
    }
    std::vector<uint8_t> padded(bytes.begin() + at, bytes.begin() + at + k);
    padded.resize(static_cast<size_t>((k + 3) / 4 * 4), 0);
    if (whale_rt_comm_driver_send(comm, me, to, kStoreTag, padded.data(),
                                  static_cast<int64_t>(padded.size())) !=
        WHALE_RT_OK)
      return false;
  }
  return true;
}

bool recvBytes(whale_rt_comm *comm, int32_t me, int32_t from,
               std::vector<uint8_t> &bytes) {
  const int64_t n = static_cast<int64_t>(bytes.size());
  for (int64_t at = 0; at < n; at += kChunk) {
    const int64_t k = std::min(kChunk, n - at);
    if (k % 4 == 0) {
      if (whale_rt_comm_driver_recv(comm, me, from, kStoreTag,
                                    bytes.data() + at, k) != WHALE_RT_OK)
        return false;
      continue;
    }
    std::vector<uint8_t> padded(static_cast<size_t>((k + 3) / 4 * 4));
    if (whale_rt_comm_driver_recv(comm, me, from, kStoreTag, padded.data(),
                                  static_cast<int64_t>(padded.size())) !=
        WHALE_RT_OK)
      return false;
    std::memcpy(bytes.data() + at, padded.data(), static_cast<size_t>(k));
  }
  return true;
}

} // namespace

std::string exchangeStoreCopies(whale_rt_comm *comm,
                                const ProcessLayout &layout,
                                const HeldState &own, HeldState &copy,
                                int64_t &sentBytes) {
  sentBytes = 0;
  if (!layout.active() || layout.processes < 2)
    return "no other process keeps a copy";
  const int32_t per = static_cast<int32_t>(layout.perProcess);
  const int32_t me = layout.process * per,
                next = keeperOf(layout.process, layout.processes) * per,
                previous = ((layout.process + layout.processes - 1) %
                            layout.processes) *
                           per;
  const std::string toNext = "sending this process's state to process " +
                             std::to_string(next / per) + " failed",
                    fromPrevious =
                        "receiving process " + std::to_string(previous / per) +
                        "'s state failed";
  // Sends are buffered by the transport: both directions go at once.
  std::vector<uint8_t> header = describe(own);
  int64_t headerBytes = static_cast<int64_t>(header.size());
  if (whale_rt_comm_driver_send(comm, me, next, kStoreTag, &headerBytes,
                                sizeof headerBytes) != WHALE_RT_OK ||
      !sendBytes(comm, me, next, header))
    return toNext;
  for (const auto &entry : own)
    for (const auto &[box, bytes] : entry.second) {
      if (!sendBytes(comm, me, next, bytes))
        return toNext;
      sentBytes += static_cast<int64_t>(bytes.size());
    }

  int64_t theirs = 0;
  if (whale_rt_comm_driver_recv(comm, me, previous, kStoreTag, &theirs,
                                sizeof theirs) != WHALE_RT_OK ||
      theirs < 8 || theirs % 4 != 0)
    return fromPrevious;
  std::vector<uint8_t> in(static_cast<size_t>(theirs));
  if (!recvBytes(comm, me, previous, in))
    return fromPrevious;
  size_t at = 0;
  int64_t boxes = 0;
  const std::string garbled = fromPrevious + ": its description is garbled";
  if (!take(in, at, boxes) || boxes < 0)
    return garbled;
  // The buffers of the last update are kept where they recur.
  HeldState received;
  for (int64_t b = 0; b < boxes; ++b) {
    int64_t rank = 0, nameLength = 0, dims = 0, bytes = 0;
    if (!take(in, at, rank) || !take(in, at, nameLength) || nameLength < 0 ||
        at + static_cast<size_t>(nameLength) > in.size())
      return garbled;
    std::string name(reinterpret_cast<const char *>(in.data() + at),
                     static_cast<size_t>(nameLength));
    at += static_cast<size_t>(nameLength);
    if (!take(in, at, dims) || dims < 0 || dims > 64)
      return garbled;
    Box box;
    box.offset.resize(static_cast<size_t>(dims));
    box.size.resize(static_cast<size_t>(dims));
    for (int64_t d = 0; d < dims; ++d)
      if (!take(in, at, box.offset[d]) || !take(in, at, box.size[d]))
        return garbled;
    if (!take(in, at, bytes) || bytes < 0)
      return garbled;
    std::vector<uint8_t> buffer;
    auto old = copy.find({rank, name});
    if (old != copy.end())
      if (auto kept = old->second.find(box); kept != old->second.end())
        buffer = std::move(kept->second);
    buffer.resize(static_cast<size_t>(bytes));
    if (!recvBytes(comm, me, previous, buffer))
      return fromPrevious;
    received[{rank, name}][box] = std::move(buffer);
  }
  copy = std::move(received);
  return "";
}

ProcessLoss::ProcessLoss(const std::vector<int32_t> &dead,
                         const ProcessLayout &layout,
                         const std::vector<int64_t> &grid)
    : lost(dead.begin(), dead.end()) {
  for (size_t r = 0; r < grid.size(); ++r)
    if (lost.count(layout.ownerOf(grid[r])))
      lostRanks.insert(static_cast<int64_t>(r));
  for (int32_t p = 0, next = 0; p < layout.processes; ++p)
    renumbered.push_back(lost.count(p) ? -1 : next++);
}

std::string ProcessLoss::uncovered(int32_t processes) const {
  for (int32_t p : lost)
    if (lost.count(keeperOf(p, processes)))
      return "process " + std::to_string(p) + " and process " +
             std::to_string(keeperOf(p, processes)) +
             ", which keeps the copy of its state, are both lost";
  return "";
}

int32_t ProcessLoss::holderOf(int64_t rank, const ProcessLayout &layout,
                              const std::vector<int64_t> &grid) const {
  int32_t owner = layout.ownerOf(grid[static_cast<size_t>(rank)]);
  if (lost.count(owner))
    owner = keeperOf(owner, layout.processes);
  return renumbered[static_cast<size_t>(owner)];
}

} // namespace whale
