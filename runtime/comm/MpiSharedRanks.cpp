//===- MpiSharedRanks.cpp - several ranks in each MPI process -------------===//

#include "runtime/comm/MpiSharedRanks.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <thread>
#include <tuple>

namespace whale::rt {
namespace {

using Clock = std::chrono::steady_clock;

/// The MPI tag of this transport's messages (MpiCommunicator's own are 17
/// and up from 18 for its groups' communicators, which it never makes when
/// processes share ranks).
constexpr int kSharedTag = 16;
constexpr int kCollective = 1, kMessage = 2;
constexpr size_t kHeader = sizeof(MpiSharedRanks::Key);

uint64_t hashOf(const std::vector<int> &group) {
  uint64_t h = 1469598103934665603ull;
  for (int r : group)
    h = (h ^ static_cast<uint64_t>(static_cast<uint32_t>(r))) *
        1099511628211ull;
  return h;
}

std::string seconds(std::chrono::milliseconds t) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g s", t.count() / 1000.0);
  return buf;
}

} // namespace

bool MpiSharedRanks::Key::operator<(const Key &o) const {
  return std::tie(kind, from, to, phase, a, b) <
         std::tie(o.kind, o.from, o.to, o.phase, o.a, o.b);
}

MpiSharedRanks::MpiSharedRanks(MPI_Comm world, int process, int processes,
                               int perProcess,
                               std::chrono::milliseconds timeout)
    : world(world), process(process), processes(processes),
      perProcess(perProcess), timeout(timeout),
      local(processes * perProcess, timeout),
      perRank(static_cast<size_t>(processes * perProcess)) {}

MpiSharedRanks::~MpiSharedRanks() {
  std::lock_guard<std::mutex> lock(mpi);
  // Sends nobody received are given up; MPI may still read their buffers.
  reap();
  for (Pending &p : pending) {
    MPI_Request_free(&p.request);
    handToMpiForGood(std::move(p.buffer));
  }
}

std::string MpiSharedRanks::abortReason() const {
  std::lock_guard<std::mutex> lock(abortMutex);
  return aborted;
}

void MpiSharedRanks::abort(const std::string &reason) {
  {
    std::lock_guard<std::mutex> lock(abortMutex);
    if (aborted.empty())
      aborted = reason.empty() ? "aborted" : reason;
    isAborted = true;
  }
  local.abort(reason);
  met.notify_all();
}

void MpiSharedRanks::reap() {
  for (auto it = pending.begin(); it != pending.end();) {
    int done = 0;
    MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
    it = done ? pending.erase(it) : std::next(it);
  }
}

Status MpiSharedRanks::post(int toProcess, const Key &key,
                            const Pieces &pieces) {
  Pending p;
  int64_t bytes = 0;
  for (const auto &[data, n] : pieces)
    bytes += n;
  if (bytes > INT_MAX - static_cast<int64_t>(kHeader))
    return Status::invalid("more than 2 GiB in one MPI message");
  p.buffer.resize(kHeader + static_cast<size_t>(bytes));
  std::memcpy(p.buffer.data(), &key, kHeader);
  char *at = p.buffer.data() + kHeader;
  for (const auto &[data, n] : pieces) {
    if (n > 0)
      std::memcpy(at, data, static_cast<size_t>(n));
    at += n;
  }
  std::lock_guard<std::mutex> lock(mpi);
  reap();
  if (MPI_Isend(p.buffer.data(), static_cast<int>(p.buffer.size()), MPI_BYTE,
                toProcess, kSharedTag, world, &p.request) != MPI_SUCCESS)
    return Status::internal("MPI could not send to process " +
                            std::to_string(toProcess));
  pending.push_back(std::move(p));
  return Status::ok();
}

void handToMpiForGood(std::vector<char> buffer) {
  // Reachable from a static, so LeakSanitizer does not count it.
  static std::mutex guard;
  static auto *kept = new std::deque<std::vector<char>>();
  std::lock_guard<std::mutex> lock(guard);
  kept->push_back(std::move(buffer));
}

ReceiveEnd receiveWhole(MPI_Comm comm, int from, int tag, int size,
                        std::vector<char> &out,
                        std::unique_lock<std::mutex> &lock,
                        const std::atomic<bool> &aborted,
                        Clock::time_point deadline) {
  std::vector<char> buffer(static_cast<size_t>(size));
  MPI_Request request;
  MPI_Irecv(buffer.data(), size, MPI_BYTE, from, tag, comm, &request);
  for (int polls = 0;; ++polls) {
    int done = 0;
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) {
      out = std::move(buffer);
      return ReceiveEnd::Done;
    }
    if (aborted || Clock::now() > deadline) {
      handToMpiForGood(std::move(buffer));
      return aborted ? ReceiveEnd::Aborted : ReceiveEnd::Late;
    }
    lock.unlock();
    if (polls > 100)
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    else
      std::this_thread::yield();
    lock.lock();
  }
}

Status MpiSharedRanks::take(int fromProcess, const Key &key,
                            std::vector<char> &message,
                            const std::string &where) {
  const Clock::time_point begin = Clock::now(),
                          spinUntil = begin + std::chrono::milliseconds(5),
                          deadline = begin + timeout;
  const auto slot = std::make_pair(fromProcess, key);
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mpi);
      if (auto it = mailbox.find(slot);
          it != mailbox.end() && !it->second.empty()) {
        message = std::move(it->second.front());
        it->second.pop_front();
        if (it->second.empty())
          mailbox.erase(it);
        return Status::ok();
      }
      // Whatever has arrived from that process goes to the mailbox, for
      // this thread or another.
      int arrived = 0;
      MPI_Status status;
      MPI_Iprobe(fromProcess, kSharedTag, world, &arrived, &status);
      if (arrived) {
        int size = 0;
        MPI_Get_count(&status, MPI_BYTE, &size);
        std::vector<char> raw;
        if (ReceiveEnd end = receiveWhole(world, fromProcess, kSharedTag,
                                          size, raw, lock, isAborted,
                                          deadline);
            end != ReceiveEnd::Done)
          return Status::internal(
              where + ": " +
              (end == ReceiveEnd::Aborted
                   ? abortReason()
                   : "timed out after " + seconds(timeout) +
                         " receiving from process " +
                         std::to_string(fromProcess)));
        if (raw.size() < kHeader)
          return Status::internal(where + ": a message of " +
                                  std::to_string(size) +
                                  " bytes from process " +
                                  std::to_string(fromProcess) + " has no key");
        Key got;
        std::memcpy(&got, raw.data(), kHeader);
        mailbox[{fromProcess, got}].emplace_back(raw.begin() + kHeader,
                                                 raw.end());
        continue;
      }
      reap();
    }
    if (isAborted)
      return Status::internal(where + ": " + abortReason());
    Clock::time_point now = Clock::now();
    if (now > deadline)
      return Status::internal(where + " timed out after " + seconds(timeout) +
                              ": process " + std::to_string(fromProcess) +
                              " never sent its part");
    if (now > spinUntil)
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

MpiSharedRanks::Shape
MpiSharedRanks::shapeOf(const std::vector<int> &group) const {
  Shape s;
  for (int r : group) {
    int p = ownerOf(r);
    auto at = std::find(s.procs.begin(), s.procs.end(), p);
    int j = static_cast<int>(at - s.procs.begin());
    if (at == s.procs.end()) {
      s.procs.push_back(p);
      s.members.emplace_back();
    }
    s.procOf.push_back(j);
    s.slot.push_back(static_cast<int>(s.members[j].size()));
    s.members[j].push_back(static_cast<int>(s.procOf.size()) - 1);
    if (p == process)
      s.me = j;
  }
  return s;
}

MpiSharedRanks::Key MpiSharedRanks::collectiveKey(const std::vector<int> &group,
                                                  uint64_t round,
                                                  int phase) const {
  Key k;
  k.kind = kCollective;
  k.from = group.front();
  k.to = static_cast<int32_t>(group.size());
  k.phase = phase;
  k.a = hashOf(group);
  k.b = round;
  return k;
}

MpiSharedRanks::Key MpiSharedRanks::messageKey(int from, int to,
                                               int64_t tag) const {
  Key k;
  k.kind = kMessage;
  k.from = from;
  k.to = to;
  k.a = static_cast<uint64_t>(tag);
  return k;
}

Status MpiSharedRanks::swap(const Shape &s, const Key &key,
                            const std::function<Pieces(int)> &piecesFor,
                            const std::function<int64_t(int)> &expected,
                            std::vector<std::vector<char>> &got,
                            const std::string &where) {
  const int m = static_cast<int>(s.procs.size());
  for (int q = 0; q < m; ++q)
    if (q != s.me)
      if (Status st = post(s.procs[q], key, piecesFor(q)); !st)
        return st;
  got.assign(m, {});
  for (int q = 0; q < m; ++q) {
    if (q == s.me)
      continue;
    if (Status st = take(s.procs[q], key, got[q], where); !st)
      return st;
    if (static_cast<int64_t>(got[q].size()) != expected(q))
      return Status::internal(where + ": process " +
                              std::to_string(s.procs[q]) + " sent " +
                              std::to_string(got[q].size()) + " bytes, not " +
                              std::to_string(expected(q)));
  }
  return Status::ok();
}

Status MpiSharedRanks::checkCall(const char *op, int rank,
                                 const std::vector<int> &group,
                                 std::string &where) const {
  where = std::string(op) + " over ranks [" + rankList(group) + "] (rank " +
          std::to_string(rank) + ")";
  if (Status st = checkGroup(op, size(), rank, group); !st)
    return st;
  if (!isLocal(rank))
    return Status::invalid(where + ": rank " + std::to_string(rank) +
                           " is not one of process " + std::to_string(process) +
                           "'s");
  if (isAborted)
    return Status::internal(where + ": " + abortReason());
  return Status::ok();
}

Status MpiSharedRanks::meet(const std::string &where, int rank,
                            const std::vector<int> &group, const void *in,
                            void *out, const Work &work) {
  const Shape shape = shapeOf(group);
  const std::vector<int> &mine = shape.members[shape.me];
  const int k = static_cast<int>(mine.size());
  const int at = static_cast<int>(std::find(group.begin(), group.end(), rank) -
                                  group.begin());
  const int idx = shape.slot[at];
  std::shared_ptr<Round> round;
  int64_t number = 0;
  std::unique_lock<std::mutex> lock(meetings);
  number = nextRound[{rank, group}]++;
  std::shared_ptr<Round> &slot = rounds[{group, number}];
  if (!slot) {
    slot = std::make_shared<Round>();
    slot->in.assign(k, nullptr);
    slot->out.assign(k, nullptr);
  }
  round = slot;
  round->in[idx] = in;
  round->out[idx] = out;
  ++round->arrived;
  met.notify_all();
  const Clock::time_point deadline = Clock::now() + timeout;
  if (idx != 0) {
    // The leader's own exchange is bounded by the timeout too.
    while (!round->done && !isAborted)
      if (met.wait_until(lock, deadline + timeout) ==
              std::cv_status::timeout &&
          !round->done)
        return Status::internal(where + " timed out after " +
                                seconds(timeout) +
                                ": the process's leader never finished");
    if (!round->done)
      return Status::internal(where + ": " + abortReason());
    return round->status;
  }
  while (round->arrived < k && !isAborted)
    if (met.wait_until(lock, deadline) == std::cv_status::timeout)
      break;
  Status st = Status::ok();
  if (isAborted)
    st = Status::internal(where + ": " + abortReason());
  else if (round->arrived < k)
    st = Status::internal(where + " timed out after " + seconds(timeout) +
                          ": a rank of this process never came");
  rounds.erase({group, number});
  if (st) {
    lock.unlock();
    st = work(shape, *round, static_cast<uint64_t>(number));
    lock.lock();
  }
  round->status = st;
  round->done = true;
  met.notify_all();
  return st;
}

Status MpiSharedRanks::allReduce(int rank, const std::vector<int> &group,
                                 DType dtype, void *data, int64_t count) {
  std::string where;
  if (Status st = checkCall("all_reduce", rank, group, where); !st)
    return st;
  if (std::all_of(group.begin(), group.end(),
                  [&](int r) { return isLocal(r); }))
    return local.allReduce(rank, group, dtype, data, count);
  const int64_t esz = dtypeSize(dtype);
  return meet(where, rank, group, nullptr, data, [&](const Shape &s, Round &r,
                                                    uint64_t number) {
    // Process j sums chunk j, from every member's copy in group order, and
    // hands the sums round: the traffic of a reduce-scatter and an
    // all-gather between processes.
    const int m = static_cast<int>(s.procs.size());
    std::vector<int64_t> start(m + 1, 0);
    for (int j = 0; j < m; ++j)
      start[j + 1] = start[j] + count / m + (j < count % m ? 1 : 0);
    auto chunkOf = [&](void *base, int j) {
      return static_cast<char *>(base) + start[j] * esz;
    };
    const std::vector<int> &mine = s.members[s.me];
    const int64_t len = start[s.me + 1] - start[s.me];
    std::vector<std::vector<char>> got;
    if (Status st = swap(
            s, collectiveKey(group, number, 0),
            [&](int q) {
              Pieces pieces;
              for (size_t i = 0; i < mine.size(); ++i)
                pieces.push_back(
                    {chunkOf(r.out[i], q), (start[q + 1] - start[q]) * esz});
              return pieces;
            },
            [&](int q) {
              return static_cast<int64_t>(s.members[q].size()) * len * esz;
            },
            got, where);
        !st)
      return st;
    std::vector<const void *> ins;
    for (size_t i = 0; i < group.size(); ++i)
      ins.push_back(s.procOf[i] == s.me
                        ? static_cast<const void *>(
                              chunkOf(r.out[s.slot[i]], s.me))
                        : got[s.procOf[i]].data() + s.slot[i] * len * esz);
    std::vector<char> sum(static_cast<size_t>(len * esz));
    sumInGroupOrder(dtype, sum.data(), ins, 0, len);
    for (size_t i = 0; i < mine.size(); ++i)
      if (len > 0)
        std::memcpy(chunkOf(r.out[i], s.me), sum.data(), sum.size());
    std::vector<std::vector<char>> sums;
    if (Status st = swap(
            s, collectiveKey(group, number, 1),
            [&](int) { return Pieces{{sum.data(), len * esz}}; },
            [&](int q) { return (start[q + 1] - start[q]) * esz; }, sums,
            where);
        !st)
      return st;
    for (int q = 0; q < m; ++q)
      if (q != s.me && !sums[q].empty())
        for (size_t i = 0; i < mine.size(); ++i)
          std::memcpy(chunkOf(r.out[i], q), sums[q].data(), sums[q].size());
    std::lock_guard<std::mutex> lock(meetings);
    for (int pos : mine)
      perRank[group[pos]].allReduceBytes += count * esz;
    return Status::ok();
  });
}

Status MpiSharedRanks::allGather(int rank, const std::vector<int> &group,
                                 DType dtype, const void *in, int64_t count,
                                 void *out, bool counted) {
  std::string where;
  if (Status st = checkCall("all_gather", rank, group, where); !st)
    return st;
  if (std::all_of(group.begin(), group.end(),
                  [&](int r) { return isLocal(r); })) {
    Status st = counted ? local.allGather(rank, group, dtype, in, count, out)
                        : local.driverAllGather(rank, group, dtype, in, count,
                                                out);
    return st;
  }
  const int64_t bytes = count * dtypeSize(dtype);
  return meet(where, rank, group, in, out, [&](const Shape &s, Round &r,
                                               uint64_t number) {
    const std::vector<int> &mine = s.members[s.me];
    Pieces pieces;
    for (size_t i = 0; i < mine.size(); ++i)
      pieces.push_back({r.in[i], bytes});
    std::vector<std::vector<char>> got;
    if (Status st = swap(
            s, collectiveKey(group, number, 0),
            [&](int) { return pieces; },
            [&](int q) {
              return static_cast<int64_t>(s.members[q].size()) * bytes;
            },
            got, where);
        !st)
      return st;
    for (size_t i = 0; i < mine.size(); ++i)
      for (size_t pos = 0; pos < group.size(); ++pos) {
        const void *from = s.procOf[pos] == s.me
                               ? r.in[s.slot[pos]]
                               : got[s.procOf[pos]].data() + s.slot[pos] * bytes;
        if (bytes > 0)
          std::memcpy(static_cast<char *>(r.out[i]) + pos * bytes, from,
                      static_cast<size_t>(bytes));
      }
    if (counted) {
      std::lock_guard<std::mutex> lock(meetings);
      for (int pos : mine)
        perRank[group[pos]].allGatherBytes += bytes;
    }
    return Status::ok();
  });
}

Status MpiSharedRanks::exchangeChunks(const std::string &where, int rank,
                                      const std::vector<int> &group,
                                      const void *in, void *out, int64_t bytes,
                                      const Chunks &finish,
                                      int64_t CommCounters::*field,
                                      int64_t counted) {
  return meet(where, rank, group, in, out, [&](const Shape &s, Round &r,
                                               uint64_t number) {
    // Chunk i of every member goes to member i's process.
    const std::vector<int> &mine = s.members[s.me];
    auto partOf = [&](const void *base, int pos) {
      return static_cast<const char *>(base) + pos * bytes;
    };
    std::vector<std::vector<char>> got;
    if (Status st = swap(
            s, collectiveKey(group, number, 0),
            [&](int q) {
              Pieces pieces;
              for (int pos : s.members[q])
                for (size_t i = 0; i < mine.size(); ++i)
                  pieces.push_back({partOf(r.in[i], pos), bytes});
              return pieces;
            },
            [&](int q) {
              return static_cast<int64_t>(mine.size() * s.members[q].size()) *
                     bytes;
            },
            got, where);
        !st)
      return st;
    for (size_t i = 0; i < mine.size(); ++i) {
      const int target = mine[i];
      std::vector<const void *> ins;
      for (size_t pos = 0; pos < group.size(); ++pos) {
        const int q = s.procOf[pos];
        ins.push_back(q == s.me ? static_cast<const void *>(
                                      partOf(r.in[s.slot[pos]], target))
                                : got[q].data() +
                                      (static_cast<int64_t>(i) *
                                           s.members[q].size() +
                                       s.slot[pos]) *
                                          bytes);
      }
      finish(r.out[i], ins);
    }
    std::lock_guard<std::mutex> lock(meetings);
    for (int pos : mine)
      perRank[group[pos]].*field += counted;
    return Status::ok();
  });
}

Status MpiSharedRanks::reduceScatter(int rank, const std::vector<int> &group,
                                     DType dtype, const void *in,
                                     int64_t count, void *out) {
  std::string where;
  if (Status st = checkCall("reduce_scatter", rank, group, where); !st)
    return st;
  if (std::all_of(group.begin(), group.end(),
                  [&](int r) { return isLocal(r); }))
    return local.reduceScatter(rank, group, dtype, in, count, out);
  const int64_t bytes = count * dtypeSize(dtype);
  // Each member's process adds its chunks in group order.
  return exchangeChunks(
      where, rank, group, in, out, bytes,
      [&](void *to, const std::vector<const void *> &ins) {
        sumInGroupOrder(dtype, to, ins, 0, count);
      },
      &CommCounters::reduceScatterBytes, bytes);
}

Status MpiSharedRanks::allToAll(int rank, const std::vector<int> &group,
                                DType dtype, const void *in, int64_t count,
                                void *out) {
  std::string where;
  if (Status st = checkCall("all_to_all", rank, group, where); !st)
    return st;
  if (std::all_of(group.begin(), group.end(),
                  [&](int r) { return isLocal(r); }))
    return local.allToAll(rank, group, dtype, in, count, out);
  const int64_t bytes = count * dtypeSize(dtype);
  // Each member's chunks side by side, in group order.
  return exchangeChunks(
      where, rank, group, in, out, bytes,
      [&](void *to, const std::vector<const void *> &ins) {
        for (size_t pos = 0; pos < ins.size(); ++pos)
          if (bytes > 0)
            std::memcpy(static_cast<char *>(to) + pos * bytes, ins[pos],
                        static_cast<size_t>(bytes));
      },
      &CommCounters::allToAllBytes,
      (static_cast<int64_t>(group.size()) - 1) * bytes);
}

Status MpiSharedRanks::broadcast(int rank, const std::vector<int> &group,
                                 int root, DType dtype, void *data,
                                 int64_t count) {
  std::string where;
  if (Status st = checkCall("broadcast", rank, group, where); !st)
    return st;
  auto rootAt = std::find(group.begin(), group.end(), root);
  if (rootAt == group.end())
    return Status::invalid("broadcast: the root " + std::to_string(root) +
                           " is not in the group [" + rankList(group) + "]");
  if (std::all_of(group.begin(), group.end(),
                  [&](int r) { return isLocal(r); }))
    return local.broadcast(rank, group, root, dtype, data, count);
  const int64_t bytes = count * dtypeSize(dtype);
  const int rootPos = static_cast<int>(rootAt - group.begin());
  return meet(where, rank, group, nullptr, data, [&](const Shape &s, Round &r,
                                                    uint64_t number) {
    const int m = static_cast<int>(s.procs.size());
    const std::vector<int> &mine = s.members[s.me];
    std::vector<char> got;
    const void *from = nullptr;
    if (s.procOf[rootPos] == s.me) {
      from = r.out[s.slot[rootPos]];
      for (int q = 0; q < m; ++q)
        if (q != s.me)
          if (Status st = post(s.procs[q], collectiveKey(group, number, 0),
                               {{from, bytes}});
              !st)
            return st;
    } else {
      if (Status st = take(s.procs[s.procOf[rootPos]],
                           collectiveKey(group, number, 0), got, where);
          !st)
        return st;
      if (static_cast<int64_t>(got.size()) != bytes)
        return Status::internal(where + ": the root's process sent " +
                                std::to_string(got.size()) + " bytes, not " +
                                std::to_string(bytes));
      from = got.data();
    }
    for (size_t i = 0; i < mine.size(); ++i)
      if (r.out[i] != from && bytes > 0)
        std::memcpy(r.out[i], from, static_cast<size_t>(bytes));
    std::lock_guard<std::mutex> lock(meetings);
    for (int pos : mine)
      perRank[group[pos]].broadcastBytes += bytes;
    return Status::ok();
  });
}

Status MpiSharedRanks::send(int from, int to, int64_t tag, DType dtype,
                            const void *data, int64_t count) {
  const std::string where = "send from rank " + std::to_string(from) +
                            " to rank " + std::to_string(to);
  if (!isLocal(from) || to < 0 || to >= size() || from == to)
    return Status::invalid(where + ": not one of process " +
                           std::to_string(process) + "'s ranks to another of " +
                           std::to_string(size()));
  if (isLocal(to))
    return local.send(from, to, tag, dtype, data, count);
  if (isAborted)
    return Status::internal(where + ": " + abortReason());
  const int64_t bytes = count * dtypeSize(dtype);
  if (Status st = post(ownerOf(to), messageKey(from, to, tag), {{data, bytes}});
      !st)
    return Status::internal(where + ": " + st.message());
  std::lock_guard<std::mutex> lock(meetings);
  perRank[from].sendBytes += bytes;
  return Status::ok();
}

Status MpiSharedRanks::recv(int to, int from, int64_t tag, DType dtype,
                            void *data, int64_t count) {
  const std::string where = "recv on rank " + std::to_string(to) +
                            " from rank " + std::to_string(from) + " (tag " +
                            std::to_string(tag) + ")";
  if (!isLocal(to) || from < 0 || from >= size() || from == to)
    return Status::invalid(where + ": not one of process " +
                           std::to_string(process) +
                           "'s ranks from another of " +
                           std::to_string(size()));
  if (isLocal(from))
    return local.recv(to, from, tag, dtype, data, count);
  const int64_t bytes = count * dtypeSize(dtype);
  std::vector<char> message;
  if (Status st = take(ownerOf(from), messageKey(from, to, tag), message, where);
      !st)
    return st;
  if (static_cast<int64_t>(message.size()) != bytes)
    return Status::internal(where + ": the message has " +
                            std::to_string(message.size()) +
                            " bytes, the receiver expects " +
                            std::to_string(bytes));
  if (bytes > 0)
    std::memcpy(data, message.data(), static_cast<size_t>(bytes));
  std::lock_guard<std::mutex> lock(meetings);
  perRank[to].recvBytes += bytes;
  return Status::ok();
}

void MpiSharedRanks::uncountSent(int rank, int64_t bytes) {
  if (!isLocal(rank))
    return;
  std::lock_guard<std::mutex> lock(meetings);
  perRank[rank].sendBytes -= bytes;
}

CommCounters MpiSharedRanks::counters(int rank) const {
  if (!isLocal(rank))
    return CommCounters{};
  CommCounters c = local.counters(rank);
  std::lock_guard<std::mutex> lock(meetings);
  const CommCounters &m = perRank[rank];
  c.allReduceBytes += m.allReduceBytes;
  c.allGatherBytes += m.allGatherBytes;
  c.allToAllBytes += m.allToAllBytes;
  c.reduceScatterBytes += m.reduceScatterBytes;
  c.broadcastBytes += m.broadcastBytes;
  c.sendBytes += m.sendBytes;
  c.recvBytes += m.recvBytes;
  return c;
}

void MpiSharedRanks::setCollectiveDevice(int rank, int device) {
  if (isLocal(rank))
    local.setCollectiveDevice(rank, device);
}

int MpiSharedRanks::collectiveDevice(int rank) const {
  // Another process's device is asked for by the group's members when the
  // group first meets (runtime/capi/CApiComm.cpp).
  return isLocal(rank) ? local.collectiveDevice(rank) : Communicator::kElsewhere;
}

} // namespace whale::rt
