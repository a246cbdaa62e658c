//===- CApiComm.cpp - the C ABI of ranks: communicator, all-reduce -------===//

#include "runtime/capi/CApiInternal.h"
#include "runtime/comm/SharedDeviceGroup.h"
#include "runtime/ops/Bf16.h"
#ifdef WHALE_HAVE_MPI
#include "runtime/comm/MpiCommunicator.h"
#endif

#include <algorithm>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <unistd.h>

using namespace whale::rt;
using namespace whale::rt::capi;

struct whale_rt_comm {
  explicit whale_rt_comm(std::unique_ptr<Communicator> comm)
      : comm(std::move(comm)) {}
  std::unique_ptr<Communicator> comm;
  std::shared_ptr<Profiler> profiler;
  /// Ranks each process holds (an MPI communicator's; 1 in one process,
  /// whose driver gathers nothing from others).
  int perProcess = 1;
};

namespace {
std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(
      static_cast<int64_t>(seconds * 1000.0 + 0.5));
}
} // namespace

namespace {

/// The data-parallel group a WHALE_RT_GROUP_SHARDING kind cuts (or the
/// kind itself), and the size of its sharding groups (0: not cut).
int32_t baseOf(int32_t kind) { return kind & 0xff; }
int32_t shardingOf(int32_t kind) { return kind >> 8; }

/// `ranks` (ctx at `position`) cut to ctx's sharding group of `size`
/// consecutive members, or (`copies`) to the members at ctx's position in
/// every sharding group; false where `size` does not divide them.
bool cutSharding(int32_t size, bool copies, std::vector<int> &ranks,
                 int &position) {
  const int n = static_cast<int>(ranks.size());
  if (size < 1 || n % size != 0 || position >= n)
    return false;
  std::vector<int> cut;
  if (copies) {
    for (int r = position % size; r < n; r += size)
      cut.push_back(ranks[r]);
    position /= size;
  } else {
    cut.assign(ranks.begin() + (position - position % size),
               ranks.begin() + (position - position % size + size));
    position %= size;
  }
  ranks = std::move(cut);
  return true;
}

/// The uncut data-parallel group of `group` and ctx's position in it.
bool baseGroup(whale_rt_context *ctx, int32_t group, int32_t shards,
               std::vector<int> &ranks, int &position) {
  ranks.clear();
  switch (baseOf(group)) {
  case WHALE_RT_GROUP_SHARD_PEERS:
    return shardGroupRanks(ctx, shards, /*peers=*/true, ranks, position);
  case WHALE_RT_GROUP_REPLICAS:
    for (int r = 0; r < ctx->replicas; ++r)
      ranks.push_back(ctx->grid[ctx->stage * ctx->replicas + r]);
    position = ctx->replica;
    return true;
  case WHALE_RT_GROUP_STAGES:
    for (int s = 0; s < ctx->stages; ++s)
      ranks.push_back(ctx->grid[s * ctx->replicas + ctx->replica]);
    position = ctx->stage;
    return true;
  default:
    return false;
  }
}

} // namespace

/// The ranks of ctx's group of `kind`, in order.
bool whale::rt::capi::groupRanks(whale_rt_context *ctx, int32_t kind,
                                 std::vector<int> &out) {
  int position = 0;
  return baseOf(kind) != WHALE_RT_GROUP_SHARD_PEERS &&
         collectiveGroup(ctx, kind, 0, out, position);
}

bool whale::rt::capi::collectiveGroup(whale_rt_context *ctx, int32_t group,
                                      int32_t shards, std::vector<int> &ranks,
                                      int &position) {
  if (group < 0 || !baseGroup(ctx, group, shards, ranks, position))
    return false;
  const int32_t size = shardingOf(group);
  return size == 0 || (baseOf(group) != WHALE_RT_GROUP_STAGES &&
                       cutSharding(size, /*copies=*/false, ranks, position));
}

bool whale::rt::capi::shardingCopies(whale_rt_context *ctx, int32_t group,
                                     int32_t shards, std::vector<int> &copies) {
  copies.clear();
  const int32_t size = shardingOf(group);
  int position = 0;
  if (size == 0)
    return true;
  return baseGroup(ctx, group, shards, copies, position) &&
         cutSharding(size, /*copies=*/true, copies, position);
}

whale_rt_status whale::rt::capi::needComm(whale_rt_context *ctx,
                                          const char *op) {
  if (!ctx->comm)
    return ctx->invalid(std::string(op) +
                        ": the context is not bound to a communicator");
  return WHALE_RT_OK;
}

namespace whale::rt::capi {

int32_t hostIdentity() {
  char host[256] = "";
  ::gethostname(host, sizeof host - 1);
  uint32_t h = 2166136261u; // FNV-1a
  for (const char *c = host; *c; ++c)
    h = (h ^ static_cast<unsigned char>(*c)) * 16777619u;
  return static_cast<int32_t>(h & 0x7fffffff);
}

/// The group's key, and how it reduces. On the devices' library where
/// every member's device has collectives, each on a physical device of its
/// own; in the memory of one device where every member is in this process,
/// on the same physical device. Devices are told apart by (machine,
/// device): ranks of this process as recorded when they bound; where a
/// member is in another process, the members all-gather their own (not
/// counted as traffic), once per group, as every member calls this at the
/// group's first collective. So ranks in processes on GPUs of their own
/// reduce with the device's library (NCCL), its id shared over MPI, and
/// ranks of two processes on one GPU through the host.
Status deviceCollectives(whale_rt_context *ctx, const std::vector<int> &ranks,
                         GroupWay &way, std::string &key) {
  for (int r : ranks)
    key += std::to_string(r) + ",";
  if (auto it = ctx->deviceCollectiveGroups.find(key);
      it != ctx->deviceCollectiveGroups.end()) {
    way = static_cast<GroupWay>(it->second);
    return Status::ok();
  }
  const int32_t host = hostIdentity();
  std::vector<std::pair<int32_t, int32_t>> devices; // (machine, device)
  bool elsewhere = false;
  for (int r : ranks) {
    int d = ctx->comm->collectiveDevice(r);
    if (d == Communicator::kUnbound)
      return Status::invalid("all_reduce: rank " + std::to_string(r) +
                             " has not been bound to the communicator yet");
    elsewhere = elsewhere || d == Communicator::kElsewhere;
    devices.push_back({host, d});
  }
  if (elsewhere) {
    int32_t mine[2] = {host, ctx->device->collectiveDevice()};
    std::vector<int32_t> all(2 * ranks.size());
    if (Status st = ctx->comm->driverAllGather(ctx->rank, ranks, DType::I32,
                                               mine, 2, all.data());
        !st)
      return st;
    for (size_t i = 0; i < ranks.size(); ++i)
      devices[i] = {all[2 * i], all[2 * i + 1]};
  }
  std::sort(devices.begin(), devices.end());
  const bool allDevices =
      std::all_of(devices.begin(), devices.end(),
                  [](const auto &d) { return d.second >= 0; });
  way = GroupWay::Host;
  if (allDevices &&
      std::adjacent_find(devices.begin(), devices.end()) == devices.end())
    way = GroupWay::Library;
  else if (allDevices && !elsewhere && devices.front() == devices.back() &&
           ranks.size() <= static_cast<size_t>(Device::kMaxSharedMembers))
    way = GroupWay::Shared;
  ctx->deviceCollectiveGroups[key] = static_cast<int>(way);
  return Status::ok();
}

Status bucketOnDevices(whale_rt_context *ctx, const std::vector<int> &ranks,
                       GroupWay way, const std::string &key,
                       Device::BucketOp op, float *data,
                       const std::vector<int64_t> &parts) {
  const int position = positionOf(ctx, ranks);
  const int size = static_cast<int>(ranks.size());
  if (way == GroupWay::Library)
    return ctx->device->bucketCollective(op, key, position, size, data, parts,
                                         shareFromFirst(ctx, ranks));
  return sharedDeviceBucket(
      *ctx->device, op, position, size, data, parts,
      [ctx, &ranks](const int64_t *mine, int64_t count, int64_t *all) {
        return ctx->comm->driverAllGather(ctx->rank, ranks, DType::I64, mine,
                                          count, all);
      });
}

Status packOnDevice(whale_rt_context *ctx, const Bucket &bucket,
                    Tensor &packed) {
  Device &dev = *ctx->device;
  if (Status st = Tensor::create(dev, DType::F32, {bucket.total}, packed); !st)
    return st;
  char *at = static_cast<char *>(packed.raw());
  for (whale_rt_tensor *t : bucket.tensors) {
    if (Status st = dev.copy(at, t->tensor.raw(), t->tensor.bytes()); !st)
      return st;
    at += t->tensor.bytes();
  }
  return Status::ok();
}

Status unpackOnDevice(whale_rt_context *ctx,
                      const std::vector<whale_rt_tensor *> &tensors,
                      Tensor &packed) {
  const char *at = static_cast<const char *>(packed.raw());
  for (whale_rt_tensor *t : tensors) {
    if (Status st = ctx->device->copy(t->tensor.raw(), at, t->tensor.bytes());
        !st)
      return st;
    at += t->tensor.bytes();
  }
  return Status::ok();
}

Device::ShareFromFirst shareFromFirst(whale_rt_context *ctx,
                                      const std::vector<int> &ranks) {
  return [ctx, ranks](char *bytes, int64_t count) -> Status {
    // Position 0's bytes reach everyone through a host all-gather.
    std::vector<char> all(static_cast<size_t>(count) * ranks.size());
    std::vector<char> mine(bytes, bytes + count);
    if (Status st = ctx->comm->allGather(ctx->rank, ranks, DType::I32,
                                         mine.data(), count / 4, all.data());
        !st)
      return st;
    std::memcpy(bytes, all.data(), static_cast<size_t>(count));
    return Status::ok();
  };
}

int positionOf(whale_rt_context *ctx, const std::vector<int> &ranks) {
  return static_cast<int>(std::find(ranks.begin(), ranks.end(), ctx->rank) -
                          ranks.begin());
}

/// A bucket's collective on the devices: packed into device memory, run by
/// the device's library (NCCL) or in the members' shared device, unpacked.
static whale_rt_status deviceBucket(whale_rt_context *ctx,
                                    const std::vector<int> &ranks, GroupWay way,
                                    const std::string &key,
                                    const Bucket &bucket, Device::BucketOp op) {
  Tensor packed;
  Status st = packOnDevice(ctx, bucket, packed);
  if (st)
    st = bucketOnDevices(ctx, ranks, way, key, op,
                         static_cast<float *>(packed.raw()),
                         devicePartsOf(bucket));
  if (st)
    st = unpackOnDevice(ctx, bucket.tensors, packed);
  return st ? WHALE_RT_OK : ctx->fail(st);
}

whale_rt_status makeBucket(whale_rt_context *ctx, const char *op,
                           size_t members, int32_t num_tensors,
                           whale_rt_tensor *const *ts, const int32_t *owners,
                           Bucket &bucket) {
  for (int32_t i = 0; i < num_tensors; ++i) {
    if (whale_rt_status s = needF32(ctx, op, {{"tensor", ts[i]}}))
      return s;
    if (owners && (owners[i] < 0 || size_t(owners[i]) >= members))
      return ctx->invalid(std::string(op) + ": tensor " + std::to_string(i) +
                          "'s owner " + std::to_string(owners[i]) +
                          " is not a position in a group of " +
                          std::to_string(members) + " ranks");
    bucket.total += ts[i]->tensor.numel();
  }
  if (!owners) {
    bucket.tensors.assign(ts, ts + num_tensors);
    return WHALE_RT_OK;
  }
  // Each member's tensors together, in the bucket's order within a part.
  bucket.parts.assign(members, 0);
  for (size_t m = 0; m < members; ++m)
    for (int32_t i = 0; i < num_tensors; ++i)
      if (size_t(owners[i]) == m) {
        bucket.tensors.push_back(ts[i]);
        bucket.parts[m] += ts[i]->tensor.numel();
      }
  return WHALE_RT_OK;
}

whale_rt_status sumBucket(whale_rt_context *ctx, const std::vector<int> &ranks,
                          const Bucket &bucket) {
  if (Status st = settleStarted(ctx, ranks); !st)
    return ctx->fail(st);
  CommScope scope(ctx, bucket.parts.empty() ? "all_reduce" : "reduce_to_owners");
  GroupWay way = GroupWay::Host;
  std::string key;
  if (Status st = deviceCollectives(ctx, ranks, way, key); !st)
    return ctx->fail(st);
  if (way != GroupWay::Host)
    return deviceBucket(ctx, ranks, way, key, bucket,
                        bucket.parts.empty()
                            ? Device::BucketOp::AllReduce
                            : Device::BucketOp::ReduceToOwners);
  HostBuffers::Block packed;
  Status st = packBucket(ctx, bucket, packed);
  if (st)
    st = bucket.parts.empty()
             ? ctx->comm->allReduce(ctx->rank, ranks, DType::F32,
                                    packed.as<float>(), bucket.total)
             : ctx->comm->reduceToOwners(ctx->rank, ranks, DType::F32,
                                         packed.as<float>(), bucket.parts);
  if (st)
    st = unpackBucket(ctx, bucket.tensors, packed.as<float>());
  return st ? WHALE_RT_OK : ctx->fail(st);
}

Status packBucket(whale_rt_context *ctx, const Bucket &bucket,
                  HostBuffers::Block &packed) {
  packed =
      ctx->hostBuffers.take(static_cast<size_t>(bucket.total) * sizeof(float));
  int64_t at = 0;
  for (whale_rt_tensor *t : bucket.tensors) {
    if (Status st = ctx->device->copyToHost(packed.as<float>() + at,
                                            t->tensor.raw(), t->tensor.bytes());
        !st)
      return st;
    at += t->tensor.numel();
  }
  return Status::ok();
}

Status unpackBucket(whale_rt_context *ctx,
                    const std::vector<whale_rt_tensor *> &tensors,
                    const float *packed) {
  for (whale_rt_tensor *t : tensors) {
    if (Status st = ctx->device->copyFromHost(t->tensor.raw(), packed,
                                              t->tensor.bytes());
        !st)
      return st;
    packed += t->tensor.numel();
  }
  return Status::ok();
}

whale_rt_status allReduceBucket(whale_rt_context *ctx,
                                const std::vector<int> &ranks,
                                int32_t num_tensors,
                                whale_rt_tensor *const *ts) {
  Bucket bucket;
  if (whale_rt_status s = makeBucket(ctx, "all_reduce", ranks.size(),
                                     num_tensors, ts, nullptr, bucket))
    return s;
  return sumBucket(ctx, ranks, bucket);
}

whale_rt_status sumOverCopies(whale_rt_context *ctx,
                              const std::vector<int> &copies, int position,
                              int32_t num_tensors, whale_rt_tensor *const *ts,
                              const int32_t *owners) {
  if (copies.size() < 2)
    return WHALE_RT_OK;
  std::vector<whale_rt_tensor *> mine;
  for (int32_t i = 0; i < num_tensors; ++i)
    if (owners[i] == position)
      mine.push_back(ts[i]);
  return allReduceBucket(ctx, copies, static_cast<int32_t>(mine.size()),
                         mine.data());
}

whale_rt_status clipCombined(whale_rt_context *ctx, int32_t num_grads,
                             whale_rt_tensor *const *grads, double max_norm,
                             double *norm,
                             const std::function<Status(double &)> &combine) {
  std::vector<View<float>> views;
  for (int32_t i = 0; i < num_grads; ++i) {
    if (whale_rt_status s =
            needF32(ctx, "clip_grad_norm", {{"grad", grads[i]}}))
      return s;
    views.push_back(grads[i]->tensor.view<float>());
  }
  if (!combine && !norm) {
    if (Status st = ctx->device->clipNorm(views, max_norm); !st)
      return ctx->fail(st);
    return WHALE_RT_OK;
  }
  // Summed in a fixed order in double, so every plan computes the same norm.
  double squares = 0;
  if (Status st = ctx->device->sumSquares(views, squares); !st)
    return ctx->fail(st);
  if (Status st = combine ? combine(squares) : Status::ok(); !st)
    return ctx->fail(st);
  if (Status st = ctx->device->scaleToNorm(views, squares, max_norm); !st)
    return ctx->fail(st);
  if (norm)
    *norm = std::sqrt(squares);
  return WHALE_RT_OK;
}

Status sumOverRanks(whale_rt_context *ctx, const std::vector<int> &ranks,
                    double &value) {
  if (ranks.size() <= 1)
    return Status::ok();
  if (Status st = settleStarted(ctx, ranks); !st)
    return st;
  CommScope scope(ctx, "all_reduce");
  return ctx->comm->allReduce(ctx->rank, ranks, DType::F64, &value, 1);
}

Status packGathered(whale_rt_context *ctx, Tensor &param, bool bf16,
                    float *words) {
  if (!bf16)
    return ctx->device->copyToHost(words, param.raw(), param.bytes());
  auto *halves = reinterpret_cast<uint16_t *>(words);
  if (param.numel() % 2)
    halves[param.numel()] = 0; // the last word's other half, never read
  // A device whose memory the host reads rounds straight into the bucket
  // (its own kernel, on its threads); another stages the values first.
  if (ctx->device->hostAddressable())
    return ctx->device->toBf16(param.cview<float>(),
                               View<uint16_t>{halves, param.shape()});
  std::vector<float> values(static_cast<size_t>(param.numel()));
  if (Status st =
          ctx->device->copyToHost(values.data(), param.raw(), param.bytes());
      !st)
    return st;
  for (size_t i = 0; i < values.size(); ++i)
    halves[i] = bf16Bits(values[i]);
  return Status::ok();
}

Status unpackGathered(whale_rt_context *ctx, const float *words, bool bf16,
                      Tensor &out) {
  if (!bf16)
    return ctx->device->copyFromHost(out.raw(), words, out.bytes());
  const auto *halves = reinterpret_cast<const uint16_t *>(words);
  if (ctx->device->hostAddressable())
    return ctx->device->fromBf16(View<const uint16_t>{halves, out.shape()},
                                 out.view<float>());
  std::vector<float> values(static_cast<size_t>(out.numel()));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = bf16Value(halves[i]);
  return ctx->device->copyFromHost(out.raw(), values.data(), out.bytes());
}

} // namespace whale::rt::capi

namespace {

/// A gather with parameters in bf16, through host memory: each member's
/// parameters (in index order) packed at its part of the bucket, the
/// bucket gathered from the owners, every part unpacked.
whale_rt_status gatherThroughHost(whale_rt_context *ctx,
                                  const std::vector<int> &ranks, int position,
                                  int32_t n, whale_rt_tensor *const *params,
                                  const int32_t *owners, const int32_t *bf16,
                                  whale_rt_tensor *const *outs) {
  std::vector<int64_t> parts(ranks.size(), 0);
  for (int32_t i = 0; i < n; ++i)
    parts[owners[i]] += gatheredWords(outs[i]->tensor.numel(), bf16[i] != 0);
  int64_t total = 0;
  for (int64_t p : parts)
    total += p;
  HostBuffers::Block bucket =
      ctx->hostBuffers.take(static_cast<size_t>(total) * sizeof(float));
  auto each = [&](const std::function<Status(int32_t, float *)> &f) {
    float *at = bucket.as<float>();
    for (size_t m = 0; m < ranks.size(); ++m)
      for (int32_t i = 0; i < n; ++i)
        if (owners[i] == static_cast<int32_t>(m)) {
          if (Status st = f(i, at); !st)
            return st;
          at += gatheredWords(outs[i]->tensor.numel(), bf16[i] != 0);
        }
    return Status::ok();
  };
  Status st = each([&](int32_t i, float *at) {
    return owners[i] == position
               ? packGathered(ctx, params[i]->tensor, bf16[i] != 0, at)
               : Status::ok();
  });
  if (st)
    st = settleStarted(ctx, ranks);
  if (st) {
    CommScope scope(ctx, "gather_params");
    st = ctx->comm->gatherFromOwners(ctx->rank, ranks, DType::F32,
                                     bucket.as<float>(), parts);
  }
  if (st)
    st = each([&](int32_t i, float *at) {
      return unpackGathered(ctx, at, bf16[i] != 0, outs[i]->tensor);
    });
  return st ? WHALE_RT_OK : ctx->fail(st);
}

} // namespace

extern "C" {

whale_rt_comm *whale_rt_comm_create(int32_t size, double timeout_seconds) {
  if (size < 1 || !(timeout_seconds > 0))
    return nullptr;
  try {
    return new whale_rt_comm(
        std::make_unique<InProcessCommunicator>(size, millis(timeout_seconds)));
  } catch (const std::bad_alloc &) {
    return nullptr;
  }
}

int32_t whale_rt_launched_by_mpi(void) {
#ifdef WHALE_HAVE_MPI
  return launchedByMpi() ? 1 : 0;
#else
  return 0;
#endif
}

whale_rt_status whale_rt_mpi_init_on(const void *mpi_comm, int32_t *rank,
                                     int32_t *size, char *error,
                                     int64_t error_size) {
  std::string why;
#ifdef WHALE_HAVE_MPI
  int r = 0, n = 0;
  if (Status st = initMpi(r, n, mpi_comm); st) {
    if (rank)
      *rank = r;
    if (size)
      *size = n;
    return WHALE_RT_OK;
  } else {
    why = st.message();
  }
#else
  (void)mpi_comm;
  why = "this Whale was built without MPI (install libopenmpi-dev and "
        "rebuild)";
#endif
  if (error && error_size > 0)
    std::snprintf(error, static_cast<size_t>(error_size), "%s", why.c_str());
  return WHALE_RT_INTERNAL;
}

whale_rt_status whale_rt_mpi_init(int32_t *rank, int32_t *size, char *error,
                                  int64_t error_size) {
  return whale_rt_mpi_init_on(nullptr, rank, size, error, error_size);
}

whale_rt_status whale_rt_mpi_allocation_on(const void *mpi_comm, char *names,
                                           int64_t each, int32_t *cores) {
#ifdef WHALE_HAVE_MPI
  if (!names || !cores || each < 2)
    return WHALE_RT_INVALID_ARGUMENT;
  std::vector<std::string> hosts;
  std::vector<int> counts;
  if (!processAllocation(hosts, counts, mpi_comm))
    return WHALE_RT_INTERNAL;
  for (size_t r = 0; r < hosts.size(); ++r) {
    std::snprintf(names + r * each, static_cast<size_t>(each), "%s",
                  hosts[r].c_str());
    cores[r] = counts[r];
  }
  return WHALE_RT_OK;
#else
  (void)mpi_comm;
  (void)names;
  (void)each;
  (void)cores;
  return WHALE_RT_INTERNAL;
#endif
}

whale_rt_status whale_rt_mpi_allocation(char *names, int64_t each,
                                        int32_t *cores) {
  return whale_rt_mpi_allocation_on(nullptr, names, each, cores);
}

void whale_rt_mpi_finalize(void) {
#ifdef WHALE_HAVE_MPI
  finalizeMpi();
#endif
}

void whale_rt_mpi_leave(int32_t code) {
  std::fflush(nullptr);
  std::_Exit(code);
}

void whale_rt_mpi_abort(int32_t code) {
#ifdef WHALE_HAVE_MPI
  abortMpi(code);
#endif
}

whale_rt_comm *whale_rt_comm_create_mpi_ranks(const void *mpi_comm,
                                              int32_t ranks_per_process,
                                              double timeout_seconds) {
#ifdef WHALE_HAVE_MPI
  if (!(timeout_seconds > 0) || ranks_per_process < 1)
    return nullptr;
  std::string error;
  std::unique_ptr<MpiCommunicator> comm = MpiCommunicator::create(
      millis(timeout_seconds), error, mpi_comm, ranks_per_process);
  if (!comm)
    return nullptr;
  auto *out = new (std::nothrow) whale_rt_comm(std::move(comm));
  if (out)
    out->perProcess = ranks_per_process;
  return out;
#else
  (void)mpi_comm;
  (void)ranks_per_process;
  (void)timeout_seconds;
  return nullptr;
#endif
}

whale_rt_comm *whale_rt_comm_create_mpi_on(const void *mpi_comm,
                                           double timeout_seconds) {
  return whale_rt_comm_create_mpi_ranks(mpi_comm, 1, timeout_seconds);
}

whale_rt_comm *whale_rt_comm_create_mpi(double timeout_seconds) {
  return whale_rt_comm_create_mpi_on(nullptr, timeout_seconds);
}

void whale_rt_comm_destroy(whale_rt_comm *comm) { delete comm; }

namespace {
/// `count` elements from every process (one rank of each: its first), the
/// driver's exchange, not counted as the ranks' traffic.
whale_rt_status gatherFromProcesses(whale_rt_comm *comm, int32_t rank,
                                    DType dtype, const void *in, int64_t count,
                                    void *out) {
  if (!comm || !in || !out || count < 0)
    return WHALE_RT_INVALID_ARGUMENT;
  std::vector<int> world;
  for (int r = 0; r < comm->comm->size(); r += comm->perProcess)
    world.push_back(r);
  Status st = comm->comm->driverAllGather(rank, world, dtype, in, count, out);
  return st ? WHALE_RT_OK : WHALE_RT_INTERNAL;
}
} // namespace

whale_rt_status whale_rt_comm_gather_doubles(whale_rt_comm *comm, int32_t rank,
                                             const double *in, int64_t count,
                                             double *out) {
  return gatherFromProcesses(comm, rank, DType::F64, in, count, out);
}

whale_rt_status whale_rt_comm_gather_floats(whale_rt_comm *comm, int32_t rank,
                                            const float *in, int64_t count,
                                            float *out) {
  return gatherFromProcesses(comm, rank, DType::F32, in, count, out);
}

whale_rt_status whale_rt_comm_driver_send(whale_rt_comm *comm, int32_t from,
                                          int32_t to, int64_t tag,
                                          const void *data, int64_t bytes) {
  if (!comm || (!data && bytes > 0) || bytes < 0 || bytes % 4 != 0)
    return WHALE_RT_INVALID_ARGUMENT;
  Status st = comm->comm->send(from, to, tag, DType::F32, data, bytes / 4);
  if (!st)
    return WHALE_RT_INTERNAL;
  // The driver's messages are not the ranks' traffic.
  comm->comm->uncountSent(from, bytes);
  return WHALE_RT_OK;
}

whale_rt_status whale_rt_comm_driver_recv(whale_rt_comm *comm, int32_t to,
                                          int32_t from, int64_t tag,
                                          void *data, int64_t bytes) {
  if (!comm || (!data && bytes > 0) || bytes < 0 || bytes % 4 != 0)
    return WHALE_RT_INVALID_ARGUMENT;
  Status st = comm->comm->recv(to, from, tag, DType::F32, data, bytes / 4);
  return st ? WHALE_RT_OK : WHALE_RT_INTERNAL;
}

int32_t whale_rt_comm_lost_processes(whale_rt_comm *comm, int32_t *out,
                                     int32_t capacity) {
  if (!comm)
    return 0;
  std::vector<int> lost = comm->comm->lostProcesses();
  for (int32_t i = 0; out && i < capacity && i < int32_t(lost.size()); ++i)
    out[i] = lost[static_cast<size_t>(i)];
  return static_cast<int32_t>(lost.size());
}

whale_rt_status whale_rt_mpi_survivors(const void *mpi_comm,
                                       const int32_t *lost, int32_t count,
                                       void **survivors, char *error,
                                       int64_t error_size) {
  std::string why;
  if (!survivors || count < 0 || (count > 0 && !lost)) {
    why = "no place for the survivors' communicator, or a negative count";
  } else {
#ifdef WHALE_HAVE_MPI
    *survivors =
        survivorsComm(mpi_comm, std::vector<int>(lost, lost + count), why);
    if (*survivors)
      return WHALE_RT_OK;
#else
    (void)mpi_comm;
    why = "this Whale was built without MPI";
#endif
  }
  if (error && error_size > 0)
    std::snprintf(error, static_cast<size_t>(error_size), "%s", why.c_str());
  return WHALE_RT_INTERNAL;
}

void whale_rt_mpi_comm_free(void *comm) {
#ifdef WHALE_HAVE_MPI
  freeSurvivorsComm(comm);
#else
  (void)comm;
#endif
}

void whale_rt_comm_abort(whale_rt_comm *comm, const char *reason) {
  if (comm)
    comm->comm->abort(reason ? reason : "aborted");
}

whale_rt_status whale_rt_comm_enable_trace(whale_rt_comm *comm) {
  if (!comm)
    return WHALE_RT_INVALID_ARGUMENT;
  if (!comm->profiler) {
    comm->profiler = std::make_shared<Profiler>();
    comm->profiler->nameRank(comm->comm->size(), "driver");
    comm->profiler->nameTrack(2 * comm->comm->size(), "driver steps");
  }
  return WHALE_RT_OK;
}

whale_rt_status whale_rt_comm_set_trace_checks(whale_rt_comm *comm,
                                               int32_t on) {
  if (!comm || !comm->profiler)
    return WHALE_RT_INVALID_ARGUMENT;
  comm->profiler->setCheckFinite(on != 0);
  return WHALE_RT_OK;
}

whale_rt_status whale_rt_comm_pause_trace(whale_rt_comm *comm, int32_t paused) {
  if (!comm || !comm->profiler)
    return WHALE_RT_INVALID_ARGUMENT;
  comm->profiler->setPaused(paused != 0);
  return WHALE_RT_OK;
}

void whale_rt_comm_trace_driver(whale_rt_comm *comm, const char *name,
                                int64_t start_ns, int64_t duration_ns) {
  if (!comm || !comm->profiler || !name)
    return;
  int driver = comm->comm->size();
  comm->profiler->record(name, comm->profiler->paused() ? "untraced" : "driver",
                         2 * driver, start_ns, duration_ns);
}

int64_t whale_rt_now_ns(void) { return Profiler::nowNs(); }

int32_t whale_rt_comm_write_trace(whale_rt_comm *comm, const char *path) {
  if (!comm || !comm->profiler || !path)
    return WHALE_RT_INVALID_ARGUMENT;
  return comm->profiler->writeChromeTrace(path) ? WHALE_RT_OK
                                                : WHALE_RT_INTERNAL;
}

whale_rt_status whale_rt_context_bind(whale_rt_context *ctx,
                                      whale_rt_comm *comm, int32_t stages,
                                      int32_t replicas, const int32_t *grid,
                                      int32_t stage, int32_t replica) {
  return guarded(ctx, [&]() -> whale_rt_status {
    if (!comm || !grid || stages < 1 || replicas < 1 || stage < 0 ||
        stage >= stages || replica < 0 || replica >= replicas ||
        int64_t(stages) * replicas > comm->comm->size())
      return ctx->invalid("context_bind: (stage " + std::to_string(stage) +
                          ", replica " + std::to_string(replica) +
                          ") is not in a grid of " + std::to_string(stages) +
                          " x " + std::to_string(replicas) + " ranks");
    ctx->comm = comm->comm.get();
    ctx->stages = stages;
    ctx->replicas = replicas;
    ctx->stage = stage;
    ctx->replica = replica;
    ctx->grid.assign(grid, grid + stages * replicas);
    ctx->rank = ctx->grid[stage * replicas + replica];
    ctx->comm->setCollectiveDevice(ctx->rank, ctx->device->collectiveDevice());
    if (comm->profiler) {
      ctx->profiler = comm->profiler;
      ctx->traceTrack = 2 * ctx->rank;
      std::string who = "rank " + std::to_string(ctx->rank) + " (stage " +
                        std::to_string(stage) + ", replica " +
                        std::to_string(replica) + ")";
      ctx->profiler->nameRank(ctx->rank, who);
      ctx->profiler->nameTrack(ctx->traceTrack, who + " compute");
      ctx->profiler->nameTrack(ctx->traceTrack + 1, who + " communication");
    }
    return WHALE_RT_OK;
  });
}

whale_rt_status whale_rt_all_reduce(whale_rt_context *ctx, int32_t group,
                                    int32_t num_tensors,
                                    whale_rt_tensor *const *ts) {
  return guarded(ctx, [&]() -> whale_rt_status {
    if (whale_rt_status s = needComm(ctx, "all_reduce"))
      return s;
    std::vector<int> ranks;
    if (!groupRanks(ctx, group, ranks) || num_tensors < 0 ||
        (num_tensors > 0 && !ts))
      return ctx->invalid("all_reduce: bad group or tensors");
    if (ranks.size() == 1 || num_tensors == 0)
      return WHALE_RT_OK;
    return allReduceBucket(ctx, ranks, num_tensors, ts);
  });
}

whale_rt_status whale_rt_reduce_to_owners(whale_rt_context *ctx, int32_t group,
                                          int32_t shards, int32_t num_tensors,
                                          whale_rt_tensor *const *ts,
                                          const int32_t *owners) {
  return guarded(ctx, [&]() -> whale_rt_status {
    if (whale_rt_status s = needComm(ctx, "reduce_to_owners"))
      return s;
    std::vector<int> ranks;
    int position = 0;
    if (!collectiveGroup(ctx, group, shards, ranks, position) ||
        num_tensors < 0 || (num_tensors > 0 && (!ts || !owners)))
      return ctx->invalid("reduce_to_owners: bad group, tensors or owners");
    std::vector<int> copies;
    if (!shardingCopies(ctx, group, shards, copies))
      return ctx->invalid("reduce_to_owners: bad sharding group");
    Bucket bucket;
    if (whale_rt_status s = makeBucket(ctx, "reduce_to_owners", ranks.size(),
                                       num_tensors, ts, owners, bucket))
      return s;
    if (num_tensors == 0)
      return WHALE_RT_OK;
    if (ranks.size() > 1)
      if (whale_rt_status s = sumBucket(ctx, ranks, bucket))
        return s;
    return sumOverCopies(ctx, copies, position, num_tensors, ts, owners);
  });
}

whale_rt_status whale_rt_add_into_owners(whale_rt_context *ctx, int32_t group,
                                         int32_t shards, int32_t num_tensors,
                                         whale_rt_tensor *const *grads,
                                         whale_rt_tensor *const *sums,
                                         const int32_t *owners) {
  return guarded(ctx, [&]() -> whale_rt_status {
    std::vector<int> ranks;
    int position = 0;
    if (num_tensors < 1 || !grads || !sums || !owners || !ctx->comm ||
        !collectiveGroup(ctx, group, shards, ranks, position))
      return ctx->invalid("add_into_owners: needs a bound context, a "
                          "group, and gradients with their sums and owners");
    for (int32_t i = 0; i < num_tensors; ++i)
      if (!sums[i] ||
          (owners[i] == position &&
           (!grads[i] || sums[i]->tensor.shape() != grads[i]->tensor.shape())))
        return ctx->invalid("add_into_owners: sum " + std::to_string(i) +
                            " is not its gradient's shape on its owner");
    for (int32_t i = 0; i < num_tensors; ++i) {
      if (owners[i] == position) {
        Tensor &sum = sums[i]->tensor;
        if (Status st = ctx->device->binary(BinaryOp::Add, sum.cview<float>(),
                                            grads[i]->tensor.cview<float>(),
                                            sum.view<float>());
            !st)
          return ctx->fail(st);
      } else {
        dropStorage(sums[i]);
      }
      dropStorage(grads[i]);
    }
    return WHALE_RT_OK;
  });
}

whale_rt_status whale_rt_owns(whale_rt_context *ctx, int32_t group,
                              int32_t shards, int32_t owner, int32_t *mine) {
  return guarded(ctx, [&]() -> whale_rt_status {
    std::vector<int> ranks;
    int position = 0;
    if (!mine || !ctx->comm ||
        !collectiveGroup(ctx, group, shards, ranks, position) || owner < 0 ||
        owner >= static_cast<int32_t>(ranks.size()))
      return ctx->invalid("owns: needs a bound context, a group and an owner "
                          "among its " +
                          std::to_string(ranks.size()) + " ranks");
    *mine = position == owner ? 1 : 0;
    return WHALE_RT_OK;
  });
}

whale_rt_status whale_rt_broadcast_from_owners(whale_rt_context *ctx,
                                               int32_t group, int32_t shards,
                                               int32_t num_tensors,
                                               whale_rt_tensor *const *ts,
                                               const int32_t *owners) {
  return guarded(ctx, [&]() -> whale_rt_status {
    if (whale_rt_status s = needComm(ctx, "broadcast"))
      return s;
    std::vector<int> ranks;
    int position = 0;
    if (!collectiveGroup(ctx, group, shards, ranks, position) ||
        num_tensors < 0 || (num_tensors > 0 && (!ts || !owners)))
      return ctx->invalid("broadcast: bad group, tensors or owners");
    Bucket bucket;
    if (whale_rt_status s = makeBucket(ctx, "broadcast", ranks.size(),
                                       num_tensors, ts, owners, bucket))
      return s;
    if (ranks.size() == 1 || num_tensors == 0)
      return WHALE_RT_OK;
    if (Status st = settleStarted(ctx, ranks); !st)
      return ctx->fail(st);
    CommScope scope(ctx, "broadcast");
    GroupWay way = GroupWay::Host;
    std::string key;
    if (Status st = deviceCollectives(ctx, ranks, way, key); !st)
      return ctx->fail(st);
    if (way != GroupWay::Host)
      return deviceBucket(ctx, ranks, way, key, bucket,
                          Device::BucketOp::GatherFromOwners);
    HostBuffers::Block packed;
    Status st = packBucket(ctx, bucket, packed);
    if (st)
      st = ctx->comm->gatherFromOwners(ctx->rank, ranks, DType::F32,
                                       packed.as<float>(), bucket.parts);
    if (st)
      st = unpackBucket(ctx, bucket.tensors, packed.as<float>());
    return st ? WHALE_RT_OK : ctx->fail(st);
  });
}

whale_rt_status whale_rt_param_elsewhere(whale_rt_context *ctx,
                                         const char *name,
                                         whale_rt_tensor **out) {
  return guarded(ctx, [&]() -> whale_rt_status {
    if (!name || !out)
      return ctx->invalid("param_elsewhere: bad arguments");
    // A copy an earlier plan left here (this rank held the parameter
    // then) goes, with its state: the owner holds both now.
    if (auto it = ctx->params.find(name); it != ctx->params.end()) {
      ctx->optimizerState.erase(it->second.get());
      ctx->params.erase(it);
    }
    std::unique_ptr<whale_rt_tensor> &t = ctx->heldElsewhere[name];
    if (!t) {
      t = std::make_unique<whale_rt_tensor>();
      if (Status st = Tensor::borrow(DType::F32, {0}, nullptr, t->tensor); !st)
        return ctx->fail(st);
    }
    *out = t.get();
    return WHALE_RT_OK;
  });
}

whale_rt_status whale_rt_gather_params(whale_rt_context *ctx, int32_t group,
                                       int32_t shards, int32_t num_tensors,
                                       whale_rt_tensor *const *params,
                                       const int32_t *owners,
                                       const int32_t *bf16,
                                       whale_rt_tensor *const *outs) {
  return guarded(ctx, [&]() -> whale_rt_status {
    std::vector<int> ranks;
    int position = 0;
    if (num_tensors < 1 || !params || !owners || !outs || !ctx->comm ||
        !collectiveGroup(ctx, group, shards, ranks, position))
      return ctx->invalid("gather_params: needs a bound context, a group, "
                          "and parameters with their owners and outputs");
    for (int32_t i = 0; i < num_tensors; ++i) {
      if (!params[i] || !outs[i] || owners[i] < 0 ||
          owners[i] >= static_cast<int32_t>(ranks.size()))
        return ctx->invalid("gather_params: tensor " + std::to_string(i) +
                            " lacks its parameter, its output or an owner "
                            "among the group's " +
                            std::to_string(ranks.size()) + " ranks");
      if (outs[i]->tensor.dtype() != DType::F32)
        return ctx->invalid("gather_params: output " + std::to_string(i) +
                            " is not f32");
      if (owners[i] != position)
        continue;
      Tensor &from = params[i]->tensor;
      Tensor &to = outs[i]->tensor;
      if (from.shape() != to.shape() || from.dtype() != to.dtype())
        return ctx->invalid("gather_params: parameter " + std::to_string(i) +
                            " is " + shapeString(from.shape()) +
                            ", its output " + shapeString(to.shape()));
    }
    // bf16 halves the bytes between hosts; the devices' own collectives
    // move f32.
    GroupWay way = GroupWay::Host;
    std::string key;
    if (Status st = deviceCollectives(ctx, ranks, way, key); !st)
      return ctx->fail(st);
    const bool halves =
        bf16 && way == GroupWay::Host && ranks.size() > 1 &&
        std::any_of(bf16, bf16 + num_tensors, [](int32_t b) { return b; });
    if (halves)
      return gatherThroughHost(ctx, ranks, position, num_tensors, params,
                               owners, bf16, outs);
    for (int32_t i = 0; i < num_tensors; ++i) {
      if (owners[i] != position)
        continue;
      Tensor &from = params[i]->tensor;
      Tensor &to = outs[i]->tensor;
      if (Status st = ctx->device->copy(to.raw(), from.raw(), from.bytes());
          !st)
        return ctx->fail(st);
    }
    return whale_rt_broadcast_from_owners(ctx, group, shards, num_tensors, outs,
                                          owners);
  });
}

whale_rt_status whale_rt_clip_grad_norm_group(whale_rt_context *ctx,
                                              int32_t group, int32_t num_grads,
                                              whale_rt_tensor *const *grads,
                                              double max_norm, double *norm) {
  return guarded(ctx, [&]() -> whale_rt_status {
    if (whale_rt_status s = needComm(ctx, "clip_grad_norm"))
      return s;
    std::vector<int> ranks;
    if (!groupRanks(ctx, group, ranks) || num_grads < 0 ||
        (num_grads > 0 && !grads) || !(max_norm > 0))
      return ctx->invalid(
          "clip_grad_norm: needs a group, gradients and max_norm > 0");
    // A group of one adds nothing: the device clips on its own.
    std::function<Status(double &)> overRanks;
    if (ranks.size() > 1)
      overRanks = [&](double &squares) {
        return sumOverRanks(ctx, ranks, squares);
      };
    return clipCombined(ctx, num_grads, grads, max_norm, norm, overRanks);
  });
}

whale_rt_status whale_rt_clip_grad_norm_owned(
    whale_rt_context *ctx, int32_t group, int32_t shards, int32_t sharding,
    int32_t num_grads, whale_rt_tensor *const *grads, const int32_t *sharded,
    const int32_t *owners, double max_norm, double *norm) {
  return guarded(ctx, [&]() -> whale_rt_status {
    if (whale_rt_status s = needComm(ctx, "clip_grad_norm"))
      return s;
    // Whole gradients have owners among the replicas, parts of split
    // parameters among the shard peers (the replicas holding that part);
    // with `sharding`, within ctx's sharding group of each.
    std::vector<int> replicas, peers, parts, across;
    int atReplicas = 0, atPeers = 0, atParts = 0;
    if (sharding < 0 || (sharded && shards > 0 && sharding % shards != 0) ||
        !collectiveGroup(
            ctx, WHALE_RT_GROUP_SHARDING(WHALE_RT_GROUP_REPLICAS, sharding), 0,
            replicas, atReplicas) ||
        (sharded &&
         (shards < 1 ||
          !collectiveGroup(ctx,
                           WHALE_RT_GROUP_SHARDING(WHALE_RT_GROUP_SHARD_PEERS,
                                                   sharding / shards),
                           shards, peers, atPeers) ||
          !shardGroupRanks(ctx, shards, false, parts, atParts))) ||
        (group >= 0 && !groupRanks(ctx, group, across)))
      return ctx->invalid("clip_grad_norm: bad group or shards");
    if (num_grads < 0 || (num_grads > 0 && (!grads || !owners)) ||
        !(max_norm > 0))
      return ctx->invalid("clip_grad_norm: needs gradients, their owners and "
                          "max_norm > 0");
    // Squares of what every replica holds whole (counted once), of the
    // parts no one owns (summed over the parts' group), and of what this
    // rank owns (summed over the replicas: each whole gradient's owner, and
    // each part's owner in every shard group).
    std::vector<View<float>> whole, part, mine, all;
    for (int32_t i = 0; i < num_grads; ++i) {
      if (whale_rt_status s =
              needF32(ctx, "clip_grad_norm", {{"grad", grads[i]}}))
        return s;
      const bool isPart = sharded && sharded[i];
      const size_t members = isPart ? peers.size() : replicas.size();
      if (owners[i] < -1 || owners[i] >= int32_t(members))
        return ctx->invalid("clip_grad_norm: gradient " + std::to_string(i) +
                            "'s owner " + std::to_string(owners[i]) +
                            " is not one of its " + std::to_string(members) +
                            (isPart ? " shard peers" : " replicas"));
      View<float> v = grads[i]->tensor.view<float>();
      all.push_back(v);
      if (owners[i] >= 0) {
        if (owners[i] == (isPart ? atPeers : atReplicas))
          mine.push_back(v);
      } else {
        (isPart ? part : whole).push_back(v);
      }
    }
    double squares[3] = {0, 0, 0};
    for (auto [views, sum] : {std::make_pair(&whole, &squares[0]),
                              std::make_pair(&part, &squares[1]),
                              std::make_pair(&mine, &squares[2])})
      if (Status st = ctx->device->sumSquares(*views, *sum); !st)
        return ctx->fail(st);
    if (Status st = sumOverRanks(ctx, parts, squares[1]); !st)
      return ctx->fail(st);
    if (Status st = sumOverRanks(ctx, replicas, squares[2]); !st)
      return ctx->fail(st);
    double total = squares[0] + squares[1] + squares[2];
    if (Status st = sumOverRanks(ctx, across, total); !st)
      return ctx->fail(st);
    // Every copy scales alike: the others' copies of owned gradients are
    // never read, and scaling them costs less than telling them apart.
    const double n = std::sqrt(total);
    if (n > max_norm && n > 0)
      if (Status st = ctx->device->scale(all, max_norm / n); !st)
        return ctx->fail(st);
    if (norm)
      *norm = n;
    return WHALE_RT_OK;
  });
}

int64_t whale_rt_comm_bytes(const whale_rt_context *ctx, int32_t kind) {
  if (!ctx || !ctx->comm)
    return 0;
  CommCounters c = ctx->comm->counters(ctx->rank);
  switch (kind) {
  case 0:
    return c.allReduceBytes;
  case 1:
    return c.sendBytes;
  case 2:
    return c.recvBytes;
  case 3:
    return c.allGatherBytes;
  case 4:
    return c.allToAllBytes;
  case 5:
    return c.broadcastBytes;
  case 6:
    return c.reduceToOwnersBytes;
  }
  return 0;
}

} // extern "C"
