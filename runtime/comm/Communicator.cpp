//===- Communicator.cpp - collectives among the ranks of one process ------===//
//
// InProcessCommunicator, and the argument checks every transport shares.
//
// A collective is a round: every rank of the group deposits its input, each
// computes its own output from all of them into a buffer of its own (an
// all-reduce: its slice of the elements into the round's one buffer), and
// only when all have computed does any write its output. So in-place
// all-reduce is safe, and the order of every sum is the group's order on
// every rank.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/Communicator.h"

#include "runtime/ops/Bf16.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string_view>

namespace whale::rt {

namespace {
thread_local bool collectiveThread = false;
} // namespace

bool onCollectiveThread() { return collectiveThread; }
void setOnCollectiveThread(bool on) { collectiveThread = on; }

std::string rankList(const std::vector<int> &ranks) {
  std::ostringstream os;
  for (size_t i = 0; i < ranks.size(); ++i)
    os << (i ? ", " : "") << ranks[i];
  return os.str();
}

namespace {

/// "0.05 s", "120 s".
std::string seconds(std::chrono::milliseconds t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", t.count() / 1000.0);
  return buf;
}

/// out = ins[0] + ins[1] + ... element by element, in that order, a block
/// at a time through a buffer: `out` may be one of the inputs (at the same
/// offset), as when a member sums its own chunk in place.
template <class T>
void sumInto(T *out, const std::vector<const void *> &ins, int64_t offset,
             int64_t count) {
  constexpr int64_t kBlock = 512;
  T acc[kBlock];
  for (int64_t at = 0; at < count; at += kBlock) {
    const int64_t n = std::min(kBlock, count - at);
    const T *first = static_cast<const T *>(ins[0]) + offset + at;
    std::copy(first, first + n, acc);
    for (size_t k = 1; k < ins.size(); ++k) {
      const T *in = static_cast<const T *>(ins[k]) + offset + at;
      for (int64_t i = 0; i < n; ++i)
        acc[i] += in[i];
    }
    std::copy(acc, acc + n, out + at);
  }
}

/// sumInto for bf16 storage: summed in fp32 in the same order, rounded
/// once at the end, so a sum of many ranks loses no more than one rounding.
void sumIntoBf16(uint16_t *out, const std::vector<const void *> &ins,
                 int64_t offset, int64_t count) {
  constexpr int64_t kBlock = 512;
  float acc[kBlock];
  for (int64_t at = 0; at < count; at += kBlock) {
    const int64_t n = std::min(kBlock, count - at);
    const uint16_t *first = static_cast<const uint16_t *>(ins[0]) + offset + at;
    for (int64_t i = 0; i < n; ++i)
      acc[i] = bf16Value(first[i]);
    for (size_t k = 1; k < ins.size(); ++k) {
      const uint16_t *in = static_cast<const uint16_t *>(ins[k]) + offset + at;
      for (int64_t i = 0; i < n; ++i)
        acc[i] += bf16Value(in[i]);
    }
    for (int64_t i = 0; i < n; ++i)
      out[at + i] = bf16Bits(acc[i]);
  }
}

} // namespace

void sumInGroupOrder(DType dtype, void *out,
                     const std::vector<const void *> &ins, int64_t offset,
                     int64_t count) {
  switch (dtype) {
  case DType::F32:
    return sumInto(static_cast<float *>(out), ins, offset, count);
  case DType::F64:
    return sumInto(static_cast<double *>(out), ins, offset, count);
  case DType::I32:
    return sumInto(static_cast<int32_t *>(out), ins, offset, count);
  case DType::I64:
    return sumInto(static_cast<int64_t *>(out), ins, offset, count);
  case DType::BF16:
    return sumIntoBf16(static_cast<uint16_t *>(out), ins, offset, count);
  }
}

Status Communicator::reduceToOwners(int rank, const std::vector<int> &group,
                                    DType dtype, void *data,
                                    const std::vector<int64_t> &parts) {
  int64_t count = 0, from = 0;
  if (Status st = checkParts(group, rank, parts, count, from); !st)
    return st;
  return allReduce(rank, group, dtype, data, count);
}

Status Communicator::gatherFromOwners(int rank,
                                      const std::vector<int> &group,
                                      DType dtype, void *data,
                                      const std::vector<int64_t> &parts) {
  int64_t count = 0, from = 0;
  if (Status st = checkParts(group, rank, parts, count, from); !st)
    return st;
  char *at = static_cast<char *>(data);
  for (size_t k = 0; k < group.size(); ++k) {
    if (parts[k] > 0)
      if (Status st = broadcast(rank, group, group[k], dtype, at, parts[k]);
          !st)
        return st;
    at += parts[k] * dtypeSize(dtype);
  }
  return Status::ok();
}

Status checkParts(const std::vector<int> &group, int rank,
                  const std::vector<int64_t> &parts, int64_t &count,
                  int64_t &from) {
  if (parts.size() != group.size())
    return Status::invalid("reduce_to_owners: " + std::to_string(parts.size()) +
                           " parts for a group of " +
                           std::to_string(group.size()) + " ranks");
  count = from = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (parts[k] < 0)
      return Status::invalid("reduce_to_owners: part " + std::to_string(k) +
                             " has a negative size");
    if (k < group.size() && group[k] == rank)
      from = count;
    count += parts[k];
  }
  return Status::ok();
}

struct InProcessCommunicator::Round {
  std::string op;
  DType dtype;
  int64_t count;
  int root;
  /// A reduce to owners: each member's part.
  std::vector<int64_t> parts;
  std::vector<const void *> inputs;
  std::vector<bool> arrivedAt;
  int arrived = 0, computed = 0, left = 0;
  /// An all-reduce's sums, each member writing its slice.
  std::unique_ptr<char[]> sums;
  int64_t sumsBytes = 0;
};

InProcessCommunicator::InProcessCommunicator(int size,
                                             std::chrono::milliseconds timeout)
    : size_(size), timeout(timeout), perRank(std::max(size, 0)) {}

void InProcessCommunicator::abort(const std::string &reason) {
  std::lock_guard<std::mutex> lock(mutex);
  if (aborted.empty())
    aborted = reason.empty() ? "aborted" : reason;
  changed.notify_all();
}

void InProcessCommunicator::setCollectiveDevice(int rank, int device) {
  std::lock_guard<std::mutex> lock(mutex);
  if (collectiveDevices.size() != static_cast<size_t>(size_))
    collectiveDevices.assign(size_, kUnbound);
  if (rank >= 0 && rank < size_)
    collectiveDevices[rank] = device;
}

int InProcessCommunicator::collectiveDevice(int rank) const {
  std::lock_guard<std::mutex> lock(mutex);
  return rank >= 0 && static_cast<size_t>(rank) < collectiveDevices.size()
             ? collectiveDevices[rank]
             : kUnbound;
}

CommCounters InProcessCommunicator::counters(int rank) const {
  std::lock_guard<std::mutex> lock(mutex);
  return rank >= 0 && rank < size_ ? perRank[rank] : CommCounters{};
}

void InProcessCommunicator::uncountSent(int rank, int64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex);
  if (rank >= 0 && rank < size_)
    perRank[rank].sendBytes -= bytes;
}

Status checkGroup(const char *op, int size, int rank,
                  const std::vector<int> &group) {
  if (group.empty())
    return Status::invalid(std::string(op) + ": the group is empty");
  for (int r : group)
    if (r < 0 || r >= size)
      return Status::invalid(std::string(op) + ": rank " + std::to_string(r) +
                             " is not one of the " + std::to_string(size) +
                             " ranks");
  std::vector<int> sorted = group;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    return Status::invalid(std::string(op) + ": the group [" + rankList(group) +
                           "] names a rank twice");
  if (std::find(group.begin(), group.end(), rank) == group.end())
    return Status::invalid(std::string(op) + ": rank " + std::to_string(rank) +
                           " is not in the group [" + rankList(group) + "]");
  return Status::ok();
}

Status InProcessCommunicator::checkRanks(const char *op, int rank,
                                         const std::vector<int> &group) const {
  return checkGroup(op, size_, rank, group);
}

Status InProcessCommunicator::collective(const char *op, int rank,
                                         const std::vector<int> &group,
                                         DType dtype, int64_t count,
                                         const void *in, void *out,
                                         int64_t outCount, int root,
                                         int64_t *counter,
                                         const std::vector<int64_t> *parts) {
  if (Status st = checkRanks(op, rank, group); !st)
    return st;
  if (count < 0)
    return Status::invalid(std::string(op) + ": negative count");
  const int n = static_cast<int>(group.size());
  const int pos = static_cast<int>(std::find(group.begin(), group.end(), rank) -
                                   group.begin());
  const std::string where = std::string(op) + " over ranks [" +
                            rankList(group) + "] (rank " +
                            std::to_string(rank) + ")";

  std::unique_lock<std::mutex> lock(mutex);
  if (!aborted.empty())
    return Status::internal(where + ": " + aborted);
  int64_t seq = nextRound[{rank, group}]++;
  std::shared_ptr<Round> &slot = rounds[{group, seq}];
  if (!slot) {
    slot = std::make_shared<Round>();
    slot->op = op;
    slot->dtype = dtype;
    slot->count = count;
    slot->root = root;
    if (parts)
      slot->parts = *parts;
    slot->inputs.assign(n, nullptr);
    slot->arrivedAt.assign(n, false);
    if (std::string_view(op) == "all_reduce" && count > 0) {
      // The buffer of an earlier round when it is large enough: a step
      // all-reduces the same buckets again and again.
      slot->sumsBytes = count * dtypeSize(dtype);
      if (spareBytes >= slot->sumsBytes) {
        slot->sums = std::move(spare);
        slot->sumsBytes = spareBytes;
        spareBytes = 0;
      } else {
        slot->sums.reset(new char[slot->sumsBytes]);
      }
    }
  }
  std::shared_ptr<Round> round = slot;
  if (round->op != op || round->dtype != dtype || round->count != count ||
      round->root != root || (parts && round->parts != *parts)) {
    std::string msg = where + " does not match the " + round->op + " of " +
                      std::to_string(round->count) + " " +
                      dtypeName(round->dtype) +
                      " elements the other ranks called";
    aborted = msg;
    changed.notify_all();
    return Status::internal(msg);
  }
  round->inputs[pos] = in;
  round->arrivedAt[pos] = true;
  ++round->arrived;
  changed.notify_all();

  auto waitFor = [&](auto done, const char *phase) -> Status {
    if (changed.wait_for(lock, timeout,
                         [&] { return done() || !aborted.empty(); }) &&
        aborted.empty())
      return Status::ok();
    if (!aborted.empty())
      return Status::internal(where + ": " + aborted);
    std::vector<int> missing;
    for (int i = 0; i < n; ++i)
      if (!round->arrivedAt[i])
        missing.push_back(group[i]);
    std::string msg =
        where + " timed out after " + seconds(timeout) + " " + phase +
        (missing.empty() ? std::string()
                         : "; rank(s) " + rankList(missing) + " never came");
    aborted = msg;
    changed.notify_all();
    return Status::internal(msg);
  };
  if (Status st = waitFor([&] { return round->arrived == n; },
                          "waiting for every rank");
      !st)
    return st;
  lock.unlock();

  // Every input is in place and stays untouched until all have computed.
  const int64_t elem = dtypeSize(dtype);
  const std::string kind = op;
  // What this member's output will hold, staged apart from the inputs
  // (another member may still read from this one's output), in a buffer
  // each thread keeps: a step makes the same collectives again and again,
  // and a buffer of megabytes freed each time faults in afresh each time.
  thread_local std::vector<char> staged;
  bool isStaged = false;
  if (kind == "all_reduce") {
    // Each member sums a slice, every element in the group's order as one
    // member alone would: 1/n of the sums each, and bit for bit the same.
    const int64_t chunk = (count + n - 1) / n;
    const int64_t from = std::min(count, pos * chunk);
    const int64_t to = std::min(count, from + chunk);
    if (to > from)
      sumInGroupOrder(dtype, round->sums.get() + from * elem, round->inputs,
                      from, to - from);
  } else if (kind == "reduce_to_owners") {
    // This member's part, summed over its own copy: the others read only
    // their parts of it.
    int64_t from = 0;
    for (int k = 0; k < pos; ++k)
      from += round->parts[k];
    if (round->parts[pos] > 0)
      sumInGroupOrder(dtype, static_cast<char *>(out) + from * elem,
                      round->inputs, from, round->parts[pos]);
  } else if (kind == "gather_from_owners") {
    // Every other member's part, from where it lies in its owner's copy:
    // no member writes its own part, the one the others read.
    int64_t at = 0;
    for (int k = 0; k < n; at += round->parts[k++])
      if (k != pos && round->parts[k] > 0)
        std::memcpy(static_cast<char *>(out) + at * elem,
                    static_cast<const char *>(round->inputs[k]) + at * elem,
                    round->parts[k] * elem);
  } else {
    isStaged = true;
    staged.resize(static_cast<size_t>(outCount * elem));
    if (kind == "reduce_scatter") {
      sumInGroupOrder(dtype, staged.data(), round->inputs, pos * count, count);
    } else if (kind == "all_to_all") {
      // Member k's chunk for this position, in member order.
      for (int k = 0; k < n; ++k)
        if (count > 0)
          std::memcpy(staged.data() + k * count * elem,
                      static_cast<const char *>(round->inputs[k]) +
                          pos * count * elem,
                      count * elem);
    } else if (kind == "all_gather") {
      for (int k = 0; k < n; ++k)
        if (count > 0)
          std::memcpy(staged.data() + k * count * elem, round->inputs[k],
                      count * elem);
    } else { // broadcast
      int rootPos = static_cast<int>(
          std::find(group.begin(), group.end(), root) - group.begin());
      if (count > 0)
        std::memcpy(staged.data(), round->inputs[rootPos], count * elem);
    }
  }

  lock.lock();
  ++round->computed;
  changed.notify_all();
  if (Status st = waitFor([&] { return round->computed == n; },
                          "waiting for every rank to read");
      !st)
    return st;
  lock.unlock();
  if (kind == "all_reduce" && count > 0)
    std::memcpy(out, round->sums.get(), count * elem);
  else if (isStaged && !staged.empty())
    std::memcpy(out, staged.data(), staged.size());
  lock.lock();
  if (++round->left == n) {
    if (round->sumsBytes > spareBytes) {
      spare = std::move(round->sums);
      spareBytes = round->sumsBytes;
    }
    rounds.erase({group, seq});
  }
  // An all-to-all's own chunk stays, as does an owner's part: what
  // leaves the rank is the rest. An owner's part leaves for every other.
  *counter += (kind == "all_to_all"           ? (n - 1) * count
               : kind == "reduce_to_owners"   ? count - round->parts[pos]
               : kind == "gather_from_owners" ? (n - 1) * round->parts[pos]
                                              : count) *
              elem;
  return Status::ok();
}

Status InProcessCommunicator::allReduce(int rank, const std::vector<int> &group,
                                        DType dtype, void *data,
                                        int64_t count) {
  int64_t dummy = 0;
  int64_t *c = counter(rank, &CommCounters::allReduceBytes, dummy);
  return collective("all_reduce", rank, group, dtype, count, data, data, count,
                    -1, c);
}

Status InProcessCommunicator::reduceToOwners(int rank,
                                             const std::vector<int> &group,
                                             DType dtype, void *data,
                                             const std::vector<int64_t> &parts) {
  return ownersCollective("reduce_to_owners", &CommCounters::reduceToOwnersBytes,
                          rank, group, dtype, data, parts);
}

Status InProcessCommunicator::gatherFromOwners(
    int rank, const std::vector<int> &group, DType dtype, void *data,
    const std::vector<int64_t> &parts) {
  return ownersCollective("gather_from_owners", &CommCounters::broadcastBytes,
                          rank, group, dtype, data, parts);
}

Status InProcessCommunicator::ownersCollective(
    const char *op, int64_t CommCounters::*field, int rank,
    const std::vector<int> &group, DType dtype, void *data,
    const std::vector<int64_t> &parts) {
  int64_t count = 0, from = 0;
  if (Status st = checkParts(group, rank, parts, count, from); !st)
    return st;
  int64_t dummy = 0;
  return collective(op, rank, group, dtype, count, data, data, count, -1,
                    counter(rank, field, dummy), &parts);
}

Status InProcessCommunicator::allGather(int rank, const std::vector<int> &group,
                                        DType dtype, const void *in,
                                        int64_t count, void *out) {
  int64_t dummy = 0;
  int64_t *c = counter(rank, &CommCounters::allGatherBytes, dummy);
  return collective("all_gather", rank, group, dtype, count, in, out,
                    count * static_cast<int64_t>(group.size()), -1, c);
}

Status InProcessCommunicator::allToAll(int rank, const std::vector<int> &group,
                                       DType dtype, const void *in,
                                       int64_t count, void *out) {
  int64_t dummy = 0;
  int64_t *c = counter(rank, &CommCounters::allToAllBytes, dummy);
  return collective("all_to_all", rank, group, dtype, count, in, out,
                    count * static_cast<int64_t>(group.size()), -1, c);
}

Status InProcessCommunicator::reduceScatter(int rank,
                                            const std::vector<int> &group,
                                            DType dtype, const void *in,
                                            int64_t count, void *out) {
  int64_t dummy = 0;
  int64_t *c = counter(rank, &CommCounters::reduceScatterBytes, dummy);
  return collective("reduce_scatter", rank, group, dtype, count, in, out, count,
                    -1, c);
}

Status InProcessCommunicator::broadcast(int rank, const std::vector<int> &group,
                                        int root, DType dtype, void *data,
                                        int64_t count) {
  if (std::find(group.begin(), group.end(), root) == group.end())
    return Status::invalid("broadcast: the root " + std::to_string(root) +
                           " is not in the group [" + rankList(group) + "]");
  int64_t dummy = 0;
  int64_t *c = counter(rank, &CommCounters::broadcastBytes, dummy);
  return collective("broadcast", rank, group, dtype, count, data, data, count,
                    root, c);
}

Status InProcessCommunicator::send(int from, int to, int64_t tag, DType dtype,
                                   const void *data, int64_t count) {
  if (from < 0 || from >= size_ || to < 0 || to >= size_ || from == to)
    return Status::invalid("send from rank " + std::to_string(from) +
                           " to rank " + std::to_string(to) +
                           ": not two distinct ranks of " +
                           std::to_string(size_));
  const int64_t bytes = count * dtypeSize(dtype);
  HostBuffers::Block message = messages.take(static_cast<size_t>(bytes));
  if (bytes > 0)
    std::memcpy(message.data(), data, bytes);
  std::lock_guard<std::mutex> lock(mutex);
  if (!aborted.empty())
    return Status::internal("send from rank " + std::to_string(from) +
                            " to rank " + std::to_string(to) + ": " + aborted);
  mailbox[{from, to, tag}].push_back(std::move(message));
  perRank[from].sendBytes += bytes;
  changed.notify_all();
  return Status::ok();
}

Status InProcessCommunicator::recv(int to, int from, int64_t tag, DType dtype,
                                   void *data, int64_t count) {
  const std::string where = "recv on rank " + std::to_string(to) +
                            " from rank " + std::to_string(from) + " (tag " +
                            std::to_string(tag) + ")";
  if (from < 0 || from >= size_ || to < 0 || to >= size_ || from == to)
    return Status::invalid(where + ": not two distinct ranks of " +
                           std::to_string(size_));
  const int64_t bytes = count * dtypeSize(dtype);
  std::unique_lock<std::mutex> lock(mutex);
  auto key = std::make_tuple(from, to, tag);
  bool ready = changed.wait_for(lock, timeout, [&] {
    auto it = mailbox.find(key);
    return (it != mailbox.end() && !it->second.empty()) || !aborted.empty();
  });
  auto it = mailbox.find(key);
  if (it == mailbox.end() || it->second.empty()) {
    if (!aborted.empty())
      return Status::internal(where + ": " + aborted);
    (void)ready;
    std::string msg = where + " timed out after " + seconds(timeout) +
                      ": rank " + std::to_string(from) + " never sent";
    aborted = msg;
    changed.notify_all();
    return Status::internal(msg);
  }
  HostBuffers::Block message = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty())
    mailbox.erase(it);
  if (static_cast<int64_t>(message.bytesAsked()) != bytes)
    return Status::internal(
        where + ": the message has " + std::to_string(message.bytesAsked()) +
        " bytes, the receiver expects " + std::to_string(bytes));
  perRank[to].recvBytes += bytes;
  lock.unlock();
  if (bytes > 0)
    std::memcpy(data, message.data(), bytes);
  return Status::ok();
}

} // namespace whale::rt
