//===- MpiCommunicator.cpp - collectives among ranks in processes ---------===//

#include "runtime/comm/MpiCommunicator.h"
#include "runtime/comm/MpiSharedRanks.h"
#include "runtime/comm/PeerWatch.h"
#include "runtime/comm/SharedMemoryGroup.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <sys/mman.h>
#include <unistd.h>

namespace whale::rt {
namespace {

using Clock = std::chrono::steady_clock;

/// The MPI tag of every point-to-point message; Whale's own tag travels in
/// the message's first 8 bytes (MPI tags may be as small as 32767).
constexpr int kMessageTag = 17;
constexpr int kGroupTag = 18;
/// Making the survivors' communicator, above every group's tag.
constexpr int kSurvivorsTag = 32760;

std::string mpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<size_t>(length));
}

} // namespace

struct MpiCommunicator::Impl {
  /// A duplicate of the communicator the ranks are (the world, or a host's
  /// own): Whale's messages never meet the host's.
  MPI_Comm world = MPI_COMM_NULL;
  int rank = 0, size = 1;
  std::chrono::milliseconds timeout{0};
  /// One MPI call at a time from this process (MPI_THREAD_SERIALIZED).
  std::mutex mpi;
  std::atomic<bool> isAborted{false};
  mutable std::mutex abortMutex;
  std::string aborted;
  /// The processes the peer watch found dead (under abortMutex).
  std::vector<int> lost;
  std::map<std::vector<int>, MPI_Comm> groups;
  /// Messages received before their recv asked, by (from, tag), in order.
  std::map<std::pair<int, int64_t>, std::deque<std::vector<char>>> mailbox;
  /// Sends in flight, with the buffers they read.
  struct Pending {
    MPI_Request request;
    std::vector<char> buffer;
  };
  std::deque<Pending> pending;
  CommCounters counters;
  int collectiveDevice = Communicator::kUnbound;
  /// Staging buffers of collectives done (Staging), kept for the next.
  std::vector<std::vector<char>> spareScratch;
  /// Each process's host (the lowest process that shares its memory), and
  /// the prefix of this communicator's shared-memory segments' names.
  std::vector<int> hostOf;
  std::string segmentPrefix;
  /// A group all of whose processes share this one's host: its
  /// collectives move through its segment (SharedMemoryGroup.h), one at a
  /// time.
  struct HostGroup {
    std::unique_ptr<SharedMemoryGroup> memory;
    std::mutex busy;
  };
  std::map<std::vector<int>, std::unique_ptr<HostGroup>> hostGroups;
  /// Several ranks per process: every call goes there.
  std::unique_ptr<MpiSharedRanks> shared;
  /// Connections to the other processes that tell when one dies.
  std::unique_ptr<PeerWatch> watch;

  /// Every wait of this process fails with `reason` from now on.
  void abort(const std::string &reason) {
    if (shared)
      shared->abort(reason);
    std::lock_guard<std::mutex> lock(abortMutex);
    if (aborted.empty())
      aborted = reason.empty() ? "aborted" : reason;
    isAborted = true;
  }

  /// Starts the peer watch: every process takes part in the exchange,
  /// even one that could not listen (it sends port 0, and nobody
  /// watches). Without a watch a lost process is noticed by the timeout
  /// alone, which a warning says.
  void watchPeers() {
    if (const char *off = std::getenv("WHALE_NO_PEER_WATCH"); off && *off)
      return;
    PeerEndpoint self;
    std::string why;
    std::unique_ptr<PeerWatch> w = PeerWatch::listen(self, why);
    std::vector<PeerEndpoint> all(static_cast<size_t>(size));
    if (MPI_Allgather(&self, sizeof self, MPI_BYTE, all.data(), sizeof self,
                      MPI_BYTE, world) != MPI_SUCCESS)
      return;
    bool everyone = true;
    for (const PeerEndpoint &e : all)
      everyone = everyone && e.port != 0;
    if (!everyone && why.empty())
      why = "a process could not listen for its peers";
    if (w && everyone &&
        w->start(rank, all, std::chrono::seconds(30),
                 [this](int dead, const std::string &report) {
                   std::fprintf(stderr, "whale: %s\n", report.c_str());
                   {
                     std::lock_guard<std::mutex> lock(abortMutex);
                     lost.push_back(dead);
                   }
                   abort(report);
                 },
                 why)) {
      watch = std::move(w);
      return;
    }
    std::fprintf(stderr,
                 "whale: warning: process %d cannot watch its peers (%s); a "
                 "lost process is noticed by the %g s timeout only\n",
                 rank, why.c_str(), timeout.count() / 1000.0);
  }

  std::string abortReason() {
    std::lock_guard<std::mutex> lock(abortMutex);
    return aborted;
  }

  /// Frees the buffers of sends that completed.
  void reap() {
    for (auto it = pending.begin(); it != pending.end();) {
      int done = 0;
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      it = done ? pending.erase(it) : std::next(it);
    }
  }

  /// Waits for `request` within the timeout, unless aborted. MPI moves a
  /// non-blocking collective on only while it is polled: the first
  /// milliseconds poll without pause (a step's collectives finish in
  /// them), then every 20 us so that a long wait does not hold a core.
  /// On a rank's collective thread every poll pauses: the rank's work
  /// runs meanwhile, and a spin would take its core.
  /// Between polls the lock is let go, so that the process's other
  /// thread may call MPI meanwhile (a started all-reduce is polled on the
  /// rank's collective thread while the rank's own thread sends,
  /// receives or runs a collective over another group); MPI sees one call
  /// at a time (MPI_THREAD_SERIALIZED).
  Status wait(MPI_Request &request, const std::string &where,
              std::unique_lock<std::mutex> &lock) {
    return pollUntil(
        [&](bool &done) {
          int finished = 0;
          int rc = MPI_Test(&request, &finished, MPI_STATUS_IGNORE);
          done = finished != 0;
          return rc == MPI_SUCCESS
                     ? Status::ok()
                     : Status::internal(where + ": " + mpiError(rc));
        },
        where, &lock,
        onCollectiveThread() ? std::chrono::microseconds(0)
                             : std::chrono::microseconds(5000));
  }

  /// Waits until `ready()` holds (a shared-memory collective's round),
  /// within the timeout, unless aborted, without holding MPI. Every few
  /// polls it lets MPI move this process's sends on (a peer may be
  /// receiving one before it comes to the collective). A collective
  /// thread spins briefly too: a round's wait is short, and pausing in
  /// each of a large collective's rounds would add up.
  Status waitUntil(const std::function<bool()> &ready,
                   const std::string &where) {
    int polls = 0;
    return pollUntil(
        [&](bool &done) {
          done = ready();
          if (!done && ++polls % 64 == 0) {
            std::unique_lock<std::mutex> turn(mpi, std::try_to_lock);
            int flag = 0;
            if (turn)
              MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, world, &flag,
                         MPI_STATUS_IGNORE);
          }
          return Status::ok();
        },
        where, nullptr,
        onCollectiveThread() ? std::chrono::microseconds(100)
                             : std::chrono::microseconds(5000));
  }

  /// Polls `test` (which sets `done`, or fails the wait) without pause for
  /// `spin`, then every 20 us, until the timeout or an abort; `held`, when
  /// given, is let go between polls.
  Status pollUntil(const std::function<Status(bool &done)> &test,
                   const std::string &where, std::unique_lock<std::mutex> *held,
                   std::chrono::microseconds spin) {
    const Clock::time_point begin = Clock::now(), spinUntil = begin + spin,
                            deadline = begin + timeout;
    bool sleeping = spin.count() == 0;
    for (int polls = 0;; ++polls) {
      bool done = false;
      if (Status st = test(done); !st)
        return st;
      if (done)
        return Status::ok();
      if (isAborted)
        return Status::internal(where + ": " + abortReason());
      if (polls % 64 == 0) { // the clock is read every 64 polls
        Clock::time_point now = Clock::now();
        if (now > deadline) {
          char buf[64];
          std::snprintf(buf, sizeof buf, "%g s", timeout.count() / 1000.0);
          return Status::internal(where + " timed out after " + buf +
                                  ": a rank of the group never came");
        }
        sleeping = sleeping || now > spinUntil;
      }
      if (held)
        held->unlock();
      if (sleeping)
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      else
        std::this_thread::yield();
      if (held)
        held->lock();
    }
  }

  /// The shared-memory wait of a collective described by `where`.
  SharedMemoryGroup::Wait waiter(const std::string &where) {
    return [this, where](const std::function<bool()> &ready) {
      return waitUntil(ready, where);
    };
  }

  /// Learns which processes share this one's host, and names this
  /// communicator's segments after a number the first process drew.
  /// Collective over the world, once.
  void meetHosts() {
    MPI_Comm node;
    if (MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL,
                            &node) != MPI_SUCCESS)
      return;
    int host = rank;
    MPI_Bcast(&host, 1, MPI_INT, 0, node);
    MPI_Comm_free(&node);
    hostOf.assign(static_cast<size_t>(size), -1);
    MPI_Allgather(&host, 1, MPI_INT, hostOf.data(), 1, MPI_INT, world);
    unsigned long long draw = 0;
    if (rank == 0)
      draw = (static_cast<unsigned long long>(std::random_device{}()) << 32) ^
             static_cast<unsigned long long>(getpid());
    MPI_Bcast(&draw, 1, MPI_UNSIGNED_LONG_LONG, 0, world);
    char name[64];
    std::snprintf(name, sizeof name, "/whale-%llx", draw);
    segmentPrefix = name;
  }

  /// After `group`'s communicator `comm` is made: when all its processes
  /// share this host, every member maps the group's segment and they
  /// agree that all could (else the group's collectives go through MPI, as
  /// they do with WHALE_MPI_SHARED_MEMORY=0). Collective over the group.
  void shareMemory(const std::vector<int> &group, MPI_Comm comm) {
    if (segmentPrefix.empty() || group.size() < 2)
      return;
    for (int r : group)
      if (hostOf[r] != hostOf[rank])
        return;
    const char *off = std::getenv("WHALE_MPI_SHARED_MEMORY");
    uint64_t hash = 1469598103934665603ull;
    for (int r : group)
      hash = (hash ^ static_cast<uint64_t>(r)) * 1099511628211ull;
    char name[96];
    std::snprintf(name, sizeof name, "%s-%zx-%llx", segmentPrefix.c_str(),
                  group.size(), static_cast<unsigned long long>(hash));
    const int position = static_cast<int>(
        std::find(group.begin(), group.end(), rank) - group.begin());
    std::string why;
    std::unique_ptr<SharedMemoryGroup> memory;
    // Every member counts the same processes on the host and the same
    // cores, so all choose the same buffers.
    const int onHost = static_cast<int>(
        std::count(hostOf.begin(), hostOf.end(), hostOf[rank]));
    const int64_t buffer =
        onHost > static_cast<int>(std::thread::hardware_concurrency())
            ? SharedMemoryGroup::kOversubscribedBufferBytes
            : SharedMemoryGroup::kBufferBytes;
    if (!(off && std::string(off) == "0"))
      memory = SharedMemoryGroup::open(name, static_cast<int>(group.size()),
                                       position, buffer, why);
    int mine = memory ? 1 : 0, all = 0;
    if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
      all = 0;
    if (position == 0) { // every member has tried to map it by now
      if (memory)
        memory->unlink();
      else
        shm_unlink(name); // another member may have made it
    }
    if (!all)
      return;
    auto g = std::make_unique<HostGroup>();
    g->memory = std::move(memory);
    hostGroups[group] = std::move(g);
  }

  /// `group`'s shared memory, when its collectives move through it.
  HostGroup *hostGroup(const std::vector<int> &group) {
    auto it = hostGroups.find(group);
    return it == hostGroups.end() ? nullptr : it->second.get();
  }

  /// A collective's staging buffer, kept between calls (fresh memory for
  /// each would cost its page faults every step); one per collective in
  /// flight.
  std::vector<char> takeScratch() {
    if (spareScratch.empty())
      return {};
    std::vector<char> out = std::move(spareScratch.back());
    spareScratch.pop_back();
    return out;
  }
  void giveScratch(std::vector<char> buffer) {
    spareScratch.push_back(std::move(buffer));
  }

  /// The MPI communicator of `group` (its i-th rank group[i]).
  Status groupComm(const std::vector<int> &group, MPI_Comm &out) {
    if (auto it = groups.find(group); it != groups.end()) {
      out = it->second;
      return Status::ok();
    }
    MPI_Group world, sub;
    MPI_Comm_group(this->world, &world);
    MPI_Group_incl(world, static_cast<int>(group.size()), group.data(), &sub);
    // A tag of the group's own, so that two groups a process shares, made
    // at once by their other members, are never confused.
    uint64_t hash = 1469598103934665603ull;
    for (int r : group)
      hash = (hash ^ static_cast<uint64_t>(r)) * 1099511628211ull;
    int tag = kGroupTag + static_cast<int>(hash % 30000);
    int rc = MPI_Comm_create_group(this->world, sub, tag, &out);
    MPI_Group_free(&sub);
    MPI_Group_free(&world);
    if (rc != MPI_SUCCESS)
      return Status::internal("making the communicator of ranks [" +
                              rankList(group) + "]: " + mpiError(rc));
    groups[group] = out;
    shareMemory(group, out);
    return Status::ok();
  }

  /// Checks a collective's arguments and finds its communicator.
  Status prepare(const char *op, int caller, const std::vector<int> &group,
                 int64_t bytesPerRank, MPI_Comm &comm, std::string &where) {
    where = std::string(op) + " over ranks [" + rankList(group) + "] (rank " +
            std::to_string(caller) + ")";
    if (Status st = checkGroup(op, size, caller, group); !st)
      return st;
    if (caller != rank)
      return Status::invalid(where + ": this process is rank " +
                             std::to_string(rank));
    if (bytesPerRank < 0)
      return Status::invalid(where + ": negative count");
    if (bytesPerRank * static_cast<int64_t>(group.size()) > INT_MAX)
      return Status::invalid(where + ": more than 2 GiB in one MPI call");
    if (isAborted)
      return Status::internal(where + ": " + abortReason());
    return groupComm(group, comm);
  }
};

bool launchedByMpi() {
  for (const char *v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(v))
      return true;
  return false;
}

Status initMpi(int &rank, int &size, const void *base) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) !=
        MPI_SUCCESS)
      return Status::internal("MPI could not start");
    if (provided < MPI_THREAD_SERIALIZED)
      return Status::internal("this MPI offers no MPI_THREAD_SERIALIZED: a "
                              "rank's calls come from its own thread");
  }
  MPI_Comm comm = base ? *static_cast<const MPI_Comm *>(base) : MPI_COMM_WORLD;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  return Status::ok();
}

bool processAllocation(std::vector<std::string> &hosts, std::vector<int> &cores,
                       const void *base) {
  int initialized = 0, size = 0, length = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    return false;
  MPI_Comm comm = base ? *static_cast<const MPI_Comm *>(base) : MPI_COMM_WORLD;
  MPI_Comm_size(comm, &size);
  std::vector<char> mine(MPI_MAX_PROCESSOR_NAME, 0),
      all(static_cast<size_t>(size) * MPI_MAX_PROCESSOR_NAME, 0);
  MPI_Get_processor_name(mine.data(), &length);
  int myCores = static_cast<int>(std::thread::hardware_concurrency());
  std::vector<int> allCores(static_cast<size_t>(size));
  if (MPI_Allgather(mine.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(),
                    MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm) != MPI_SUCCESS ||
      MPI_Allgather(&myCores, 1, MPI_INT, allCores.data(), 1, MPI_INT, comm) !=
          MPI_SUCCESS)
    return false;
  hosts.clear();
  for (int r = 0; r < size; ++r)
    hosts.emplace_back(all.data() +
                       static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME);
  cores = allCores;
  return true;
}

void finalizeMpi() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized)
    MPI_Finalize();
}

void *survivorsComm(const void *base, const std::vector<int> &lost,
                    std::string &error) {
  MPI_Comm from = base ? *static_cast<const MPI_Comm *>(base) : MPI_COMM_WORLD;
  MPI_Group all, kept;
  MPI_Comm_group(from, &all);
  std::vector<int> out(lost);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  int rc = MPI_Group_excl(all, static_cast<int>(out.size()), out.data(), &kept);
  MPI_Group_free(&all);
  if (rc != MPI_SUCCESS) {
    error = "leaving out the lost processes: " + mpiError(rc);
    return nullptr;
  }
  auto *comm = new MPI_Comm(MPI_COMM_NULL);
  rc = MPI_Comm_create_group(from, kept, kSurvivorsTag, comm);
  MPI_Group_free(&kept);
  if (rc != MPI_SUCCESS || *comm == MPI_COMM_NULL) {
    error = "making the survivors' communicator: " + mpiError(rc);
    delete comm;
    return nullptr;
  }
  return comm;
}

void freeSurvivorsComm(void *comm) {
  auto *c = static_cast<MPI_Comm *>(comm);
  if (!c)
    return;
  if (*c != MPI_COMM_NULL)
    MPI_Comm_free(c);
  delete c;
}

void abortMpi(int code) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized)
    MPI_Abort(MPI_COMM_WORLD, code);
}

MpiCommunicator::MpiCommunicator(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}

std::unique_ptr<MpiCommunicator>
MpiCommunicator::create(std::chrono::milliseconds timeout, std::string &error,
                        const void *base, int perProcess) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    error = "MPI is not initialized";
    return nullptr;
  }
  auto impl = std::make_unique<Impl>();
  MPI_Comm from = base ? *static_cast<const MPI_Comm *>(base) : MPI_COMM_WORLD;
  if (MPI_Comm_dup(from, &impl->world) != MPI_SUCCESS) {
    error = "cannot duplicate the MPI communicator";
    return nullptr;
  }
  MPI_Comm_rank(impl->world, &impl->rank);
  MPI_Comm_size(impl->world, &impl->size);
  impl->timeout = timeout;
  if (perProcess < 1) {
    error = "a process must hold at least one rank";
    return nullptr;
  }
  if (perProcess > 1)
    impl->shared = std::make_unique<MpiSharedRanks>(
        impl->world, impl->rank, impl->size, perProcess, timeout);
  if (impl->size > 1)
    impl->watchPeers();
  if (impl->size > 1 && !impl->shared)
    impl->meetHosts();
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(std::move(impl)));
}

MpiCommunicator::~MpiCommunicator() {
  // Goodbye first: the others must not take this end for a death.
  impl->watch.reset();
  impl->shared.reset();
  std::unique_lock<std::mutex> lock(impl->mpi);
  // Sends nobody received are given up; MPI may still read their buffers.
  impl->reap();
  for (Impl::Pending &p : impl->pending) {
    MPI_Request_free(&p.request);
    handToMpiForGood(std::move(p.buffer));
  }
  for (auto &[group, comm] : impl->groups)
    if (comm != MPI_COMM_NULL)
      MPI_Comm_free(&comm);
  if (impl->world != MPI_COMM_NULL)
    MPI_Comm_free(&impl->world);
}

int MpiCommunicator::rank() const { return impl->rank; }
int MpiCommunicator::ranksPerProcess() const {
  return impl->shared ? impl->shared->size() / impl->size : 1;
}
bool MpiCommunicator::sharesMemory(const std::vector<int> &group) const {
  std::lock_guard<std::mutex> lock(impl->mpi);
  return impl->hostGroup(group) != nullptr;
}

bool MpiCommunicator::concurrentCollectives() const {
  // One rank per process: its collective thread and its own thread take
  // turns at MPI (wait lets go between polls). Several ranks per process:
  // their rounds are matched by group and order as in one process, and
  // no MPI call blocks (non-blocking sends, probed receives), so a group's
  // leader never holds MPI while it waits.
  return true;
}

int MpiCommunicator::size() const {
  return impl->shared ? impl->shared->size() : impl->size;
}

namespace {

void copyBytes(void *to, const void *from, int64_t bytes) {
  if (bytes > 0)
    std::memcpy(to, from, static_cast<size_t>(bytes));
}

/// The only memory MPI reads or writes for a collective: the caller's data
/// is copied in before and out after. A wait that gives up leaves its
/// request with MPI, which members that come late still complete, writing
/// their parts where the request points; the caller, told the call
/// failed, frees or reuses its memory. So a given-up request keeps this
/// buffer for good (handToMpiForGood), and the caller's memory is never
/// MPI's. That costs a copy of the data each way, the price of a recovery
/// that does not corrupt the survivors' heap. Otherwise the buffer goes
/// back to the spares for the next collective.
class Staging {
public:
  Staging(MpiCommunicator::Impl &impl, int64_t bytes)
      : impl(impl), buffer(impl.takeScratch()) {
    if (buffer.size() < static_cast<size_t>(bytes))
      buffer.resize(static_cast<size_t>(bytes));
  }
  ~Staging() {
    if (!keptByMpi)
      impl.giveScratch(std::move(buffer));
  }
  Staging(const Staging &) = delete;
  Staging &operator=(const Staging &) = delete;

  char *at(int64_t offset) { return buffer.data() + offset; }

  /// Waits for `request`, which reads and writes this buffer only.
  Status wait(MPI_Request &request, const std::string &where,
              std::unique_lock<std::mutex> &lock) {
    Status st = impl.wait(request, where, lock);
    if (!st) {
      handToMpiForGood(std::move(buffer));
      keptByMpi = true;
    }
    return st;
  }

private:
  MpiCommunicator::Impl &impl;
  std::vector<char> buffer;
  bool keptByMpi = false;
};

/// Sums chunk k of `data` (`len[k]` elements, one after another) on the
/// member at position k of `group`, from every member's copy in group
/// order: the same bits as the in-process transport. With `gather` every
/// member then gets every chunk's sum (an all-reduce, as a ring moves it:
/// 2 (n-1)/n of the data each way); without, each keeps its own (a reduce
/// to owners, half of that).
Status sumChunks(MpiCommunicator::Impl &impl, std::unique_lock<std::mutex> &lock,
                 MPI_Comm comm, const std::string &where, int pos,
                 DType dtype, void *data, const std::vector<int64_t> &len,
                 bool gather) {
  const int n = static_cast<int>(len.size());
  const int64_t esz = dtypeSize(dtype);
  std::vector<int> sendBytes(n), sendAt(n), recvBytes(n), recvAt(n);
  int64_t total = 0;
  for (int k = 0; k < n; ++k) {
    sendBytes[k] = static_cast<int>(len[k] * esz);
    sendAt[k] = static_cast<int>(total);
    total += sendBytes[k];
  }
  for (int k = 0; k < n; ++k) {
    recvBytes[k] = k == pos ? 0 : sendBytes[pos];
    recvAt[k] = static_cast<int>(k * int64_t(sendBytes[pos]));
  }
  // Nothing goes to this member itself through MPI.
  std::vector<int> sendOthers = sendBytes;
  sendOthers[pos] = 0;
  // The staging buffer: the chunks going out (and, gathered, every
  // chunk's sum), then the other members' copies of this member's chunk.
  Staging stage(impl, total + int64_t(n) * sendBytes[pos]);
  char *chunks = stage.at(0), *copies = stage.at(total);
  char *out = static_cast<char *>(data);
  for (int k = 0; k < n; ++k)
    if (k != pos)
      copyBytes(chunks + sendAt[k], out + sendAt[k], sendBytes[k]);
  MPI_Request request;
  MPI_Ialltoallv(chunks, sendOthers.data(), sendAt.data(), MPI_BYTE, copies,
                 recvBytes.data(), recvAt.data(), MPI_BYTE, comm, &request);
  if (Status st = stage.wait(request, where, lock); !st)
    return st;
  // This member's own copy is read where it lies, and the sum written
  // over it (sumInGroupOrder allows that).
  std::vector<const void *> ins(n);
  for (int k = 0; k < n; ++k)
    ins[k] = k == pos ? out + sendAt[pos] : copies + recvAt[k];
  sumInGroupOrder(dtype, out + sendAt[pos], ins, 0, len[pos]);
  if (!gather)
    return Status::ok();
  copyBytes(chunks + sendAt[pos], out + sendAt[pos], sendBytes[pos]);
  MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, chunks, sendBytes.data(),
                  sendAt.data(), MPI_BYTE, comm, &request);
  if (Status st = stage.wait(request, where, lock); !st)
    return st;
  for (int k = 0; k < n; ++k)
    if (k != pos)
      copyBytes(out + sendAt[k], chunks + sendAt[k], sendBytes[k]);
  return Status::ok();
}

/// A reduce to or gather from owners checked and its communicator found,
/// `lock` taken; `count` gets the parts' total.
Status prepareParts(MpiCommunicator::Impl &impl, const char *op, int rank,
                    const std::vector<int> &group, DType dtype,
                    const std::vector<int64_t> &parts,
                    std::unique_lock<std::mutex> &lock, MPI_Comm &comm,
                    std::string &where, int64_t &count) {
  int64_t from = 0;
  if (Status st = checkParts(group, rank, parts, count, from); !st)
    return st;
  lock = std::unique_lock<std::mutex>(impl.mpi);
  return impl.prepare(op, rank, group, count * dtypeSize(dtype), comm, where);
}

int positionIn(const std::vector<int> &group, int rank) {
  return static_cast<int>(std::find(group.begin(), group.end(), rank) -
                          group.begin());
}

/// Where each of `len`'s chunks begins, one after another.
std::vector<int64_t> offsetsOf(const std::vector<int64_t> &len) {
  std::vector<int64_t> at(len.size());
  int64_t total = 0;
  for (size_t k = 0; k < len.size(); ++k) {
    at[k] = total;
    total += len[k];
  }
  return at;
}

std::vector<int64_t> scaled(std::vector<int64_t> v, int64_t by) {
  for (int64_t &x : v)
    x *= by;
  return v;
}

/// sumChunks through the group's shared memory (`lock`, MPI's, is let go:
/// no MPI call is made).
Status sumChunksOnHost(MpiCommunicator::Impl &impl,
                       MpiCommunicator::Impl::HostGroup &host,
                       std::unique_lock<std::mutex> &lock,
                       const std::string &where, int pos, DType dtype,
                       void *data, const std::vector<int64_t> &len,
                       bool gather) {
  lock.unlock();
  std::lock_guard<std::mutex> busy(host.busy);
  const int64_t esz = dtypeSize(dtype);
  const std::vector<int64_t> at = offsetsOf(len);
  char *mine = static_cast<char *>(data) + at[pos] * esz;
  Status st =
      gather
          ? host.memory->allReduce(dtype, data, len, at, impl.waiter(where))
          : host.memory->reduce(dtype, data, len, at, mine, impl.waiter(where));
  lock.lock();
  return st;
}

/// sumChunks through the group's shared memory where it has some, else
/// through MPI.
Status sumOverGroup(MpiCommunicator::Impl &impl,
                    std::unique_lock<std::mutex> &lock, MPI_Comm comm,
                    const std::vector<int> &group, const std::string &where,
                    int rank, DType dtype, void *data,
                    const std::vector<int64_t> &len, bool gather) {
  const int pos = positionIn(group, rank);
  if (MpiCommunicator::Impl::HostGroup *host = impl.hostGroup(group))
    return sumChunksOnHost(impl, *host, lock, where, pos, dtype, data, len,
                           gather);
  return sumChunks(impl, lock, comm, where, pos, dtype, data, len, gather);
}

} // namespace

Status MpiCommunicator::allReduce(int rank, const std::vector<int> &group,
                                  DType dtype, void *data, int64_t count) {
  if (impl->shared)
    return impl->shared->allReduce(rank, group, dtype, data, count);
  std::unique_lock<std::mutex> lock(impl->mpi);
  const int64_t bytes = count * dtypeSize(dtype);
  MPI_Comm comm;
  std::string where;
  if (Status st = impl->prepare("all_reduce", rank, group, bytes, comm, where);
      !st)
    return st;
  // Chunks of equal size, but for one element more in the first.
  const int64_t n = static_cast<int64_t>(group.size());
  std::vector<int64_t> len(group.size());
  for (int64_t k = 0; k < n; ++k)
    len[k] = count / n + (k < count % n ? 1 : 0);
  if (Status st = sumOverGroup(*impl, lock, comm, group, where, rank, dtype,
                               data, len, /*gather=*/true);
      !st)
    return st;
  impl->counters.allReduceBytes += bytes;
  return Status::ok();
}

Status MpiCommunicator::reduceToOwners(int rank, const std::vector<int> &group,
                                       DType dtype, void *data,
                                       const std::vector<int64_t> &parts) {
  if (impl->shared) // several ranks a process: all-reduced (allowed)
    return Communicator::reduceToOwners(rank, group, dtype, data, parts);
  std::unique_lock<std::mutex> lock;
  MPI_Comm comm;
  std::string where;
  int64_t count = 0;
  if (Status st = prepareParts(*impl, "reduce_to_owners", rank, group, dtype,
                               parts, lock, comm, where, count);
      !st)
    return st;
  const int64_t esz = dtypeSize(dtype);
  const int pos = positionIn(group, rank);
  if (Status st = sumOverGroup(*impl, lock, comm, group, where, rank, dtype,
                               data, parts, /*gather=*/false);
      !st)
    return st;
  impl->counters.reduceToOwnersBytes += (count - parts[pos]) * esz;
  return Status::ok();
}

Status MpiCommunicator::gatherFromOwners(int rank,
                                         const std::vector<int> &group,
                                         DType dtype, void *data,
                                         const std::vector<int64_t> &parts) {
  if (impl->shared) // several ranks a process: broadcast part by part
    return Communicator::gatherFromOwners(rank, group, dtype, data, parts);
  std::unique_lock<std::mutex> lock;
  MPI_Comm comm;
  std::string where;
  int64_t count = 0;
  if (Status st = prepareParts(*impl, "gather_from_owners", rank, group, dtype,
                               parts, lock, comm, where, count);
      !st)
    return st;
  const int64_t esz = dtypeSize(dtype);
  const int pos = positionIn(group, rank);
  std::vector<int> bytes(group.size()), at(group.size());
  int64_t offset = 0;
  for (size_t k = 0; k < group.size(); ++k) {
    bytes[k] = static_cast<int>(parts[k] * esz);
    at[k] = static_cast<int>(offset);
    offset += bytes[k];
  }
  char *mine = static_cast<char *>(data);
  if (Impl::HostGroup *host = impl->hostGroup(group)) {
    lock.unlock();
    std::unique_lock<std::mutex> busy(host->busy);
    const std::vector<int64_t> sizes = scaled(parts, esz);
    Status st = host->memory->gather(mine + at[pos], data, sizes,
                                     offsetsOf(sizes), impl->waiter(where));
    busy.unlock();
    lock.lock();
    if (!st)
      return st;
    impl->counters.broadcastBytes +=
        (static_cast<int64_t>(group.size()) - 1) * parts[pos] * esz;
    return Status::ok();
  }
  Staging stage(*impl, offset);
  copyBytes(stage.at(at[pos]), mine + at[pos], bytes[pos]);
  MPI_Request request;
  MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, stage.at(0), bytes.data(),
                  at.data(), MPI_BYTE, comm, &request);
  if (Status st = stage.wait(request, where, lock); !st)
    return st;
  for (size_t k = 0; k < group.size(); ++k)
    if (static_cast<int>(k) != pos)
      copyBytes(mine + at[k], stage.at(at[k]), bytes[k]);
  impl->counters.broadcastBytes +=
      (static_cast<int64_t>(group.size()) - 1) * parts[pos] * esz;
  return Status::ok();
}

Status MpiCommunicator::allGather(int rank, const std::vector<int> &group,
                                  DType dtype, const void *in, int64_t count,
                                  void *out) {
  if (impl->shared)
    return impl->shared->allGather(rank, group, dtype, in, count, out,
                                   /*counted=*/true);
  std::unique_lock<std::mutex> lock(impl->mpi);
  const int64_t bytes = count * dtypeSize(dtype);
  MPI_Comm comm;
  std::string where;
  if (Status st = impl->prepare("all_gather", rank, group, bytes, comm, where);
      !st)
    return st;
  const int64_t n = static_cast<int64_t>(group.size());
  if (Impl::HostGroup *host = impl->hostGroup(group)) {
    lock.unlock();
    std::unique_lock<std::mutex> busy(host->busy);
    const std::vector<int64_t> sizes(group.size(), bytes);
    Status st = host->memory->gather(in, out, sizes, offsetsOf(sizes),
                                     impl->waiter(where));
    busy.unlock();
    lock.lock();
    if (!st)
      return st;
    impl->counters.allGatherBytes += bytes;
    return Status::ok();
  }
  Staging stage(*impl, bytes + n * bytes);
  copyBytes(stage.at(0), in, bytes);
  MPI_Request request;
  MPI_Iallgather(stage.at(0), static_cast<int>(bytes), MPI_BYTE,
                 stage.at(bytes), static_cast<int>(bytes), MPI_BYTE, comm,
                 &request);
  if (Status st = stage.wait(request, where, lock); !st)
    return st;
  copyBytes(out, stage.at(bytes), n * bytes);
  impl->counters.allGatherBytes += bytes;
  return Status::ok();
}

Status MpiCommunicator::driverAllGather(int rank, const std::vector<int> &group,
                                        DType dtype, const void *in,
                                        int64_t count, void *out) {
  if (impl->shared)
    return impl->shared->allGather(rank, group, dtype, in, count, out,
                                   /*counted=*/false);
  Status st = allGather(rank, group, dtype, in, count, out);
  if (st) {
    std::lock_guard<std::mutex> lock(impl->mpi);
    impl->counters.allGatherBytes -= count * dtypeSize(dtype);
  }
  return st;
}

Status MpiCommunicator::reduceScatter(int rank, const std::vector<int> &group,
                                      DType dtype, const void *in,
                                      int64_t count, void *out) {
  if (impl->shared)
    return impl->shared->reduceScatter(rank, group, dtype, in, count, out);
  std::unique_lock<std::mutex> lock(impl->mpi);
  const int64_t bytes = count * dtypeSize(dtype);
  MPI_Comm comm;
  std::string where;
  if (Status st =
          impl->prepare("reduce_scatter", rank, group, bytes, comm, where);
      !st)
    return st;
  // Part i of every member comes to member i, which adds them in group
  // order.
  const int64_t n = static_cast<int64_t>(group.size());
  if (Impl::HostGroup *host = impl->hostGroup(group)) {
    lock.unlock();
    std::unique_lock<std::mutex> busy(host->busy);
    const std::vector<int64_t> len(group.size(), count);
    Status st = host->memory->reduce(dtype, in, len, offsetsOf(len), out,
                                     impl->waiter(where));
    busy.unlock();
    lock.lock();
    if (!st)
      return st;
    impl->counters.reduceScatterBytes += bytes;
    return Status::ok();
  }
  Staging stage(*impl, 2 * n * bytes);
  copyBytes(stage.at(0), in, n * bytes);
  char *parts = stage.at(n * bytes);
  MPI_Request request;
  MPI_Ialltoall(stage.at(0), static_cast<int>(bytes), MPI_BYTE, parts,
                static_cast<int>(bytes), MPI_BYTE, comm, &request);
  if (Status st = stage.wait(request, where, lock); !st)
    return st;
  std::vector<const void *> ins(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k)
    ins[k] = parts + k * bytes;
  sumInGroupOrder(dtype, out, ins, 0, count);
  impl->counters.reduceScatterBytes += bytes;
  return Status::ok();
}

Status MpiCommunicator::allToAll(int rank, const std::vector<int> &group,
                                 DType dtype, const void *in, int64_t count,
                                 void *out) {
  if (impl->shared)
    return impl->shared->allToAll(rank, group, dtype, in, count, out);
  std::unique_lock<std::mutex> lock(impl->mpi);
  const int64_t bytes = count * dtypeSize(dtype);
  MPI_Comm comm;
  std::string where;
  if (Status st = impl->prepare("all_to_all", rank, group, bytes, comm, where);
      !st)
    return st;
  const int64_t n = static_cast<int64_t>(group.size());
  Staging stage(*impl, 2 * n * bytes);
  copyBytes(stage.at(0), in, n * bytes);
  MPI_Request request;
  MPI_Ialltoall(stage.at(0), static_cast<int>(bytes), MPI_BYTE,
                stage.at(n * bytes), static_cast<int>(bytes), MPI_BYTE, comm,
                &request);
  if (Status st = stage.wait(request, where, lock); !st)
    return st;
  copyBytes(out, stage.at(n * bytes), n * bytes);
  impl->counters.allToAllBytes +=
      (static_cast<int64_t>(group.size()) - 1) * bytes;
  return Status::ok();
}

Status MpiCommunicator::broadcast(int rank, const std::vector<int> &group,
                                  int root, DType dtype, void *data,
                                  int64_t count) {
  if (impl->shared)
    return impl->shared->broadcast(rank, group, root, dtype, data, count);
  std::unique_lock<std::mutex> lock(impl->mpi);
  auto at = std::find(group.begin(), group.end(), root);
  if (at == group.end())
    return Status::invalid("broadcast: the root " + std::to_string(root) +
                           " is not in the group [" + rankList(group) + "]");
  const int64_t bytes = count * dtypeSize(dtype);
  MPI_Comm comm;
  std::string where;
  if (Status st = impl->prepare("broadcast", rank, group, bytes, comm, where);
      !st)
    return st;
  Staging stage(*impl, bytes);
  if (rank == root)
    copyBytes(stage.at(0), data, bytes);
  MPI_Request request;
  MPI_Ibcast(stage.at(0), static_cast<int>(bytes), MPI_BYTE,
             static_cast<int>(at - group.begin()), comm, &request);
  if (Status st = stage.wait(request, where, lock); !st)
    return st;
  if (rank != root)
    copyBytes(data, stage.at(0), bytes);
  impl->counters.broadcastBytes += bytes;
  return Status::ok();
}

Status MpiCommunicator::send(int from, int to, int64_t tag, DType dtype,
                             const void *data, int64_t count) {
  if (impl->shared)
    return impl->shared->send(from, to, tag, dtype, data, count);
  std::unique_lock<std::mutex> lock(impl->mpi);
  const std::string where = "send from rank " + std::to_string(from) +
                            " to rank " + std::to_string(to);
  if (from != impl->rank || to < 0 || to >= impl->size || from == to)
    return Status::invalid(where + ": not this process's rank (" +
                           std::to_string(impl->rank) + ") and another of " +
                           std::to_string(impl->size));
  const int64_t bytes = count * dtypeSize(dtype);
  if (bytes < 0 || bytes > INT_MAX - 8)
    return Status::invalid(where + ": more than 2 GiB in one message");
  if (impl->isAborted)
    return Status::internal(where + ": " + impl->abortReason());
  impl->reap();
  // Buffered: the message is copied and sent while the rank goes on.
  Impl::Pending p;
  p.buffer.resize(static_cast<size_t>(bytes) + 8);
  std::memcpy(p.buffer.data(), &tag, 8);
  if (bytes > 0)
    std::memcpy(p.buffer.data() + 8, data, static_cast<size_t>(bytes));
  int rc = MPI_Isend(p.buffer.data(), static_cast<int>(p.buffer.size()),
                     MPI_BYTE, to, kMessageTag, impl->world, &p.request);
  if (rc != MPI_SUCCESS)
    return Status::internal(where + ": " + mpiError(rc));
  impl->pending.push_back(std::move(p));
  impl->counters.sendBytes += bytes;
  return Status::ok();
}

Status MpiCommunicator::recv(int to, int from, int64_t tag, DType dtype,
                             void *data, int64_t count) {
  if (impl->shared)
    return impl->shared->recv(to, from, tag, dtype, data, count);
  std::unique_lock<std::mutex> lock(impl->mpi);
  const std::string where = "recv on rank " + std::to_string(to) +
                            " from rank " + std::to_string(from) + " (tag " +
                            std::to_string(tag) + ")";
  if (to != impl->rank || from < 0 || from >= impl->size || from == to)
    return Status::invalid(where + ": not this process's rank (" +
                           std::to_string(impl->rank) + ") and another of " +
                           std::to_string(impl->size));
  const int64_t bytes = count * dtypeSize(dtype);
  const auto key = std::make_pair(from, tag);
  const Clock::time_point deadline = Clock::now() + impl->timeout;
  for (;;) {
    if (auto it = impl->mailbox.find(key);
        it != impl->mailbox.end() && !it->second.empty()) {
      std::vector<char> message = std::move(it->second.front());
      it->second.pop_front();
      if (it->second.empty())
        impl->mailbox.erase(it);
      if (static_cast<int64_t>(message.size()) != bytes)
        return Status::internal(
            where + ": the message has " + std::to_string(message.size()) +
            " bytes, the receiver expects " + std::to_string(bytes));
      if (bytes > 0)
        std::memcpy(data, message.data(), static_cast<size_t>(bytes));
      impl->counters.recvBytes += bytes;
      return Status::ok();
    }
    // Take what `from` has sent, in order, into the mailbox.
    int arrived = 0;
    MPI_Status status;
    MPI_Iprobe(from, kMessageTag, impl->world, &arrived, &status);
    if (arrived) {
      int size = 0;
      MPI_Get_count(&status, MPI_BYTE, &size);
      std::vector<char> raw;
      if (ReceiveEnd end = receiveWhole(impl->world, from, kMessageTag, size,
                                        raw, lock, impl->isAborted, deadline);
          end != ReceiveEnd::Done)
        return Status::internal(where + ": " +
                                (end == ReceiveEnd::Aborted
                                     ? impl->abortReason()
                                     : "timed out receiving the data of a "
                                       "message"));
      int64_t got = 0;
      if (size < 8)
        return Status::internal(where + ": a message of " +
                                std::to_string(size) + " bytes has no tag");
      std::memcpy(&got, raw.data(), 8);
      impl->mailbox[{from, got}].emplace_back(raw.begin() + 8, raw.end());
      continue;
    }
    impl->reap();
    if (impl->isAborted)
      return Status::internal(where + ": " + impl->abortReason());
    if (Clock::now() > deadline) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%g s", impl->timeout.count() / 1000.0);
      return Status::internal(where + " timed out after " + buf + ": rank " +
                              std::to_string(from) + " never sent");
    }
    // Waiting, the lock is let go: the rank's collective thread may be
    // polling a started all-reduce.
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    lock.lock();
  }
}

void MpiCommunicator::abort(const std::string &reason) {
  impl->abort(reason);
}

std::vector<int> MpiCommunicator::lostProcesses() const {
  std::lock_guard<std::mutex> lock(impl->abortMutex);
  return impl->lost;
}

void MpiCommunicator::uncountSent(int rank, int64_t bytes) {
  if (impl->shared)
    return impl->shared->uncountSent(rank, bytes);
  std::unique_lock<std::mutex> lock(impl->mpi);
  if (rank == impl->rank)
    impl->counters.sendBytes -= bytes;
}

CommCounters MpiCommunicator::counters(int rank) const {
  if (impl->shared)
    return impl->shared->counters(rank);
  return rank == impl->rank ? impl->counters : CommCounters{};
}

void MpiCommunicator::setCollectiveDevice(int rank, int device) {
  if (impl->shared)
    return impl->shared->setCollectiveDevice(rank, device);
  if (rank == impl->rank)
    impl->collectiveDevice = device;
}

int MpiCommunicator::collectiveDevice(int rank) const {
  if (impl->shared)
    return impl->shared->collectiveDevice(rank);
  // Another process's device is asked for by the group's members when the
  // group first meets (runtime/capi/CApiComm.cpp).
  return rank == impl->rank ? impl->collectiveDevice : kElsewhere;
}

} // namespace whale::rt
