//===- CApiAsync.cpp - the C ABI of all-reduces that overlap compute ------===//
//
// whale_rt_all_reduce_start packs a bucket on the rank's thread and hands
// its sum to the rank's collective thread (CollectiveQueue); the rank goes
// on with its backward. whale_rt_all_reduce_wait blocks until that sum is
// done and unpacks it into the tensors. A trace shows the sum on the
// rank's communication track ("overlapped all_reduce"), and on its compute
// track the packing and unpacking ("all_reduce pack", "all_reduce unpack")
// and the time the rank waited ("all_reduce wait"): what the overlap did
// not hide.
//
// Where the sum cannot run on a thread of its own (device collectives, a
// communicator that takes one call at a time), start sums at once and the
// wait has nothing to do: the same results, without the overlap.
//
//===----------------------------------------------------------------------===//

#include "runtime/capi/CApiInternal.h"

using namespace whale::rt;
using namespace whale::rt::capi;

namespace whale::rt::capi {

Status settleStarted(whale_rt_context *ctx, const std::vector<int> &ranks) {
  return ctx->started ? ctx->started->settle(ranks) : Status::ok();
}

void forgetStarted(whale_rt_context *ctx) {
  // A failed step's: their statuses are gone.
  for (auto &[request, started] : ctx->startedAllReduces)
    (void)(started.onDevice ? ctx->device->bucketCollectiveWait(started.ticket)
                            : ctx->started->wait(request));
  ctx->startedAllReduces.clear();
  for (auto &[request, started] : ctx->startedGathers)
    if (started.bucket)
      (void)ctx->started->wait(request);
  ctx->startedGathers.clear();
}

} // namespace whale::rt::capi

namespace {

/// A bucket started on devices with collectives of their own: packed on
/// the device, handed to its communication stream; *request is minus the
/// device's ticket (0 where the device ran it at once, as a shared
/// device's group does: its work is queued behind the compute it follows
/// and waits for nothing, only its exchange of markers meets the others).
whale_rt_status startOnDevices(whale_rt_context *ctx,
                               const std::vector<int> &ranks, GroupWay way,
                               const std::string &key, const Bucket &layout,
                               int64_t *request) {
  if (Status st = settleStarted(ctx, ranks); !st)
    return ctx->fail(st);
  whale_rt_started_all_reduce started;
  started.onDevice = std::make_unique<Tensor>();
  Status st = packOnDevice(ctx, layout, *started.onDevice);
  if (st && way == GroupWay::Shared)
    st = bucketOnDevices(
        ctx, ranks, way, key,
        layout.parts.empty() ? Device::BucketOp::AllReduce
                             : Device::BucketOp::ReduceToOwners,
        static_cast<float *>(started.onDevice->raw()), devicePartsOf(layout));
  else if (st)
    st = ctx->device->bucketCollectiveStart(
        layout.parts.empty() ? Device::BucketOp::AllReduce
                             : Device::BucketOp::ReduceToOwners,
        key, positionOf(ctx, ranks), static_cast<int>(ranks.size()),
        static_cast<float *>(started.onDevice->raw()), devicePartsOf(layout),
        shareFromFirst(ctx, ranks), started.ticket);
  if (st && started.ticket == 0)
    st = unpackOnDevice(ctx, layout.tensors, *started.onDevice);
  if (!st)
    return ctx->fail(st);
  if (started.ticket != 0) {
    started.tensors = layout.tensors;
    *request = -started.ticket;
    ctx->startedAllReduces[*request] = std::move(started);
  }
  return WHALE_RT_OK;
}

/// A reduce to owners, packed: the sums this rank gets back are its own
/// part's, and the gradients it sent for the other owners are freed now,
/// while the backward goes on (ZeRO stage 2's saving: only the owner keeps
/// a summed gradient, and nothing else reads a bucket reduced to owners).
void keepOwnPart(whale_rt_context *ctx, int position, const Bucket &layout,
                 whale_rt_started_all_reduce &started) {
  std::vector<whale_rt_tensor *> own;
  int64_t at = 0;
  size_t next = 0;
  for (size_t m = 0; m < layout.parts.size(); ++m) {
    int64_t left = layout.parts[m];
    if (int(m) == position)
      started.from = at;
    while (left > 0 && next < layout.tensors.size()) {
      whale_rt_tensor *t = layout.tensors[next++];
      left -= t->tensor.numel();
      if (int(m) == position)
        own.push_back(t);
      else
        dropStorage(t);
    }
    at += layout.parts[m];
  }
  started.tensors = std::move(own);
}

/// whale_rt_all_reduce_start, and with `owners` its reduce to owners.
whale_rt_status startBucket(whale_rt_context *ctx, const char *op,
                            int32_t group, int32_t shards, int32_t num_tensors,
                            whale_rt_tensor *const *ts, const int32_t *owners,
                            int64_t *request) {
  const std::string name = op;
  if (!request)
    return ctx->invalid(name + "_start: no place for the request");
  *request = 0; // nothing to wait for, unless queued below
  if (!ctx->comm)
    return ctx->invalid(name +
                        "_start: the context is not bound to a communicator");
  std::vector<int> ranks;
  int position = 0;
  if (!collectiveGroup(ctx, group, shards, ranks, position) ||
      num_tensors < 0 || (num_tensors > 0 && !ts))
    return ctx->invalid(name + "_start: bad group or tensors");
  Bucket layout;
  if (whale_rt_status s = makeBucket(ctx, (name + "_start").c_str(),
                                     ranks.size(), num_tensors, ts, owners,
                                     layout))
    return s;
  // A sharding group's copies sum the owners' parts after (HSDP).
  std::vector<int> copies;
  if (!shardingCopies(ctx, group, shards, copies))
    return ctx->invalid(name + "_start: bad sharding group");
  if (num_tensors == 0 || (ranks.size() == 1 && copies.size() < 2))
    return WHALE_RT_OK;
  GroupWay way = GroupWay::Host;
  std::string key;
  if (Status st = deviceCollectives(ctx, ranks, way, key); !st)
    return ctx->fail(st);
  if (copies.size() < 2 && way != GroupWay::Host)
    return startOnDevices(ctx, ranks, way, key, layout, request);
  // Summed here, without the overlap: where the communicator cannot run
  // collectives beside the rank, and a sharding group's on the devices.
  if (!ctx->comm->concurrentCollectives() || way != GroupWay::Host ||
      ranks.size() == 1) {
    if (ranks.size() > 1)
      if (whale_rt_status s = sumBucket(ctx, ranks, layout))
        return s;
    return sumOverCopies(ctx, copies, position, num_tensors, ts, owners);
  }

  whale_rt_started_all_reduce started;
  started.bucket = std::make_shared<HostBuffers::Block>();
  {
    Profiler::Scope pack(ctx->profiler.get(), (name + " pack").c_str(),
                         "compute", ctx->traceTrack, ctx->site);
    if (Status st = packBucket(ctx, layout, *started.bucket); !st)
      return ctx->fail(st);
    started.tensors = layout.tensors;
    if (!layout.parts.empty())
      keepOwnPart(ctx, position, layout, started);
  }
  if (!ctx->started)
    ctx->started = std::make_unique<CollectiveQueue>();
  // What the collective thread reads is its own: copies, and the bucket.
  // Over a sharding group, the part this rank owns (one run of the packed
  // bucket, at started.from) is then summed over its copies.
  const int64_t mine = layout.parts.empty() ? 0 : layout.parts[position];
  *request = ctx->started->start(
      ranks, [comm = ctx->comm, rank = ctx->rank, ranks, copies,
              bucket = started.bucket, count = layout.total,
              parts = std::move(layout.parts), from = started.from, mine,
              profiler = ctx->profiler, track = ctx->traceTrack + 1,
              site = ctx->site, scope = "overlapped " + name] {
        Profiler::Scope sum(profiler.get(), scope.c_str(), "communication",
                            track, site);
        if (parts.empty())
          return comm->allReduce(rank, ranks, DType::F32, bucket->as<float>(),
                                 count);
        Status st = comm->reduceToOwners(rank, ranks, DType::F32,
                                         bucket->as<float>(), parts);
        if (st && copies.size() > 1 && mine > 0)
          st = comm->allReduce(rank, copies, DType::F32,
                               bucket->as<float>() + from, mine);
        return st;
      });
  ctx->startedAllReduces[*request] = std::move(started);
  return WHALE_RT_OK;
}

} // namespace

extern "C" {

whale_rt_status whale_rt_all_reduce_start(whale_rt_context *ctx, int32_t group,
                                          int32_t shards, int32_t num_tensors,
                                          whale_rt_tensor *const *ts,
                                          int64_t *request) {
  return guarded(ctx, [&] {
    return startBucket(ctx, "all_reduce", group, shards, num_tensors, ts,
                       nullptr, request);
  });
}

whale_rt_status whale_rt_reduce_to_owners_start(
    whale_rt_context *ctx, int32_t group, int32_t shards, int32_t num_tensors,
    whale_rt_tensor *const *ts, const int32_t *owners, int64_t *request) {
  return guarded(ctx, [&] {
    if (!owners && num_tensors > 0)
      return ctx->invalid("reduce_to_owners_start: no owners");
    return startBucket(ctx, "reduce_to_owners", group, shards, num_tensors, ts,
                       owners, request);
  });
}

whale_rt_status whale_rt_gather_params_start(
    whale_rt_context *ctx, int32_t group, int32_t shards, int32_t num_tensors,
    whale_rt_tensor *const *params, const int64_t *counts,
    const int32_t *owners, const int32_t *bf16, int64_t *request) {
  return guarded(ctx, [&]() -> whale_rt_status {
    std::vector<int> ranks;
    int position = 0;
    if (!request || num_tensors < 1 || !params || !counts || !owners ||
        !ctx->comm || !collectiveGroup(ctx, group, shards, ranks, position))
      return ctx->invalid("gather_params_start: needs a bound context, a "
                          "group, and parameters with their sizes, owners "
                          "and a place for the request");
    whale_rt_started_gather started;
    std::vector<int64_t> parts(ranks.size(), 0);
    for (int32_t i = 0; i < num_tensors; ++i) {
      if (!params[i] || counts[i] < 0 || owners[i] < 0 ||
          owners[i] >= static_cast<int32_t>(ranks.size()))
        return ctx->invalid("gather_params_start: parameter " +
                            std::to_string(i) +
                            " lacks its handle, its size or an owner among "
                            "the group's " +
                            std::to_string(ranks.size()) + " ranks");
      if (owners[i] == position && params[i]->tensor.numel() != counts[i])
        return ctx->invalid(
            "gather_params_start: parameter " + std::to_string(i) + " has " +
            std::to_string(params[i]->tensor.numel()) +
            " elements here, its owner, not " + std::to_string(counts[i]));
    }
    // bf16 halves the bytes between hosts; the devices' own collectives
    // move f32.
    GroupWay way = GroupWay::Host;
    std::string key;
    if (Status st = deviceCollectives(ctx, ranks, way, key); !st)
      return ctx->fail(st);
    auto halves = [&](int32_t i) {
      return bf16 && bf16[i] && way == GroupWay::Host;
    };
    for (int32_t i = 0; i < num_tensors; ++i)
      parts[owners[i]] += gatheredWords(counts[i], halves(i));
    for (size_t m = 0; m < ranks.size(); ++m)
      for (int32_t i = 0; i < num_tensors; ++i)
        if (owners[i] == static_cast<int32_t>(m)) {
          started.order.push_back(i);
          started.counts.push_back(counts[i]);
          started.bf16.push_back(halves(i));
        }
    if (ranks.size() == 1 || way != GroupWay::Host ||
        !ctx->comm->concurrentCollectives()) {
      // Gathered at the wait: the same values, without the overlap.
      started.group = group;
      started.shards = shards;
      started.params.assign(params, params + num_tensors);
      started.owners.assign(owners, owners + num_tensors);
      if (bf16)
        started.bf16Flags.assign(bf16, bf16 + num_tensors);
      *request = --ctx->deferredGathers; // no collective queued for it
      ctx->startedGathers[*request] = std::move(started);
      return WHALE_RT_OK;
    }
    int64_t total = 0, mine = 0;
    for (size_t m = 0; m < ranks.size(); ++m) {
      if (static_cast<int>(m) == position)
        mine = total;
      total += parts[m];
    }
    started.bucket = std::make_shared<HostBuffers::Block>(
        ctx->hostBuffers.take(static_cast<size_t>(total) * sizeof(float)));
    if (!ctx->started)
      ctx->started = std::make_unique<CollectiveQueue>();
    {
      Profiler::Scope pack(ctx->profiler.get(), "gather_params pack", "compute",
                           ctx->traceTrack, ctx->site);
      float *at = started.bucket->as<float>() + mine;
      for (int32_t i = 0; i < num_tensors; ++i)
        if (owners[i] == position) {
          if (Status st = packGathered(ctx, params[i]->tensor, halves(i), at);
              !st)
            return ctx->fail(st);
          at += gatheredWords(counts[i], halves(i));
        }
    }
    *request = ctx->started->start(
        ranks,
        [comm = ctx->comm, rank = ctx->rank, ranks, bucket = started.bucket,
         parts = std::move(parts), profiler = ctx->profiler,
         track = ctx->traceTrack + 1, site = ctx->site] {
          Profiler::Scope gather(profiler.get(), "overlapped gather_params",
                                 "communication", track, site);
          return comm->gatherFromOwners(rank, ranks, DType::F32,
                                        bucket->as<float>(), parts);
        });
    ctx->startedGathers[*request] = std::move(started);
    return WHALE_RT_OK;
  });
}

whale_rt_status whale_rt_gather_params_wait(whale_rt_context *ctx,
                                            int64_t request,
                                            int32_t num_tensors,
                                            whale_rt_tensor *const *outs) {
  return guarded(ctx, [&]() -> whale_rt_status {
    auto it = ctx->startedGathers.find(request);
    if (it == ctx->startedGathers.end())
      return ctx->invalid("gather_params_wait: no gather " +
                          std::to_string(request) +
                          " was started, or it was waited for already");
    whale_rt_started_gather started = std::move(it->second);
    ctx->startedGathers.erase(it);
    if (num_tensors != static_cast<int32_t>(started.order.size()) || !outs)
      return ctx->invalid(
          "gather_params_wait: " + std::to_string(started.order.size()) +
          " parameters were started, " + std::to_string(num_tensors) +
          " outputs given");
    for (size_t j = 0; j < started.order.size(); ++j) {
      whale_rt_tensor *out = outs[started.order[j]];
      if (!out || out->tensor.numel() != started.counts[j] ||
          out->tensor.dtype() != DType::F32)
        return ctx->invalid("gather_params_wait: output " +
                            std::to_string(started.order[j]) +
                            " is not an f32 tensor of " +
                            std::to_string(started.counts[j]) + " elements");
    }
    if (!started.bucket)
      return whale_rt_gather_params(
          ctx, started.group, started.shards, num_tensors,
          started.params.data(), started.owners.data(),
          started.bf16Flags.empty() ? nullptr : started.bf16Flags.data(), outs);
    {
      Profiler::Scope wait(ctx->profiler.get(), "gather_params wait",
                           "communication", ctx->traceTrack);
      if (Status st = ctx->started->wait(request); !st)
        return ctx->fail(st);
    }
    Profiler::Scope unpack(ctx->profiler.get(), "gather_params unpack",
                           "compute", ctx->traceTrack, ctx->site);
    const float *at = started.bucket->as<float>();
    for (size_t j = 0; j < started.order.size(); ++j) {
      whale_rt_tensor *out = outs[started.order[j]];
      if (Status st = unpackGathered(ctx, at, started.bf16[j], out->tensor);
          !st)
        return ctx->fail(st);
      at += gatheredWords(started.counts[j], started.bf16[j]);
    }
    return WHALE_RT_OK;
  });
}

whale_rt_status whale_rt_all_reduce_wait(whale_rt_context *ctx,
                                         int64_t request) {
  return guarded(ctx, [&]() -> whale_rt_status {
    if (request == 0)
      return WHALE_RT_OK; // summed where it was started
    auto it = ctx->startedAllReduces.find(request);
    if (it != ctx->startedAllReduces.end() && it->second.onDevice) {
      whale_rt_started_all_reduce started = std::move(it->second);
      ctx->startedAllReduces.erase(it);
      Status st = ctx->device->bucketCollectiveWait(started.ticket);
      if (st)
        st = unpackOnDevice(ctx, started.tensors, *started.onDevice);
      return st ? WHALE_RT_OK : ctx->fail(st);
    }
    if (it == ctx->startedAllReduces.end() || !ctx->started)
      return ctx->invalid("all_reduce_wait: no all-reduce " +
                          std::to_string(request) +
                          " was started, or it was waited for already");
    whale_rt_started_all_reduce started = std::move(it->second);
    ctx->startedAllReduces.erase(it);
    {
      // No site: the time waited is the collective's, not an op's.
      Profiler::Scope wait(ctx->profiler.get(), "all_reduce wait",
                           "communication", ctx->traceTrack);
      if (Status st = ctx->started->wait(request); !st)
        return ctx->fail(st);
    }
    Profiler::Scope unpack(ctx->profiler.get(), "all_reduce unpack",
                           "compute", ctx->traceTrack, ctx->site);
    if (Status st = unpackBucket(ctx, started.tensors,
                                 started.bucket->as<float>() + started.from);
        !st)
      return ctx->fail(st);
    return WHALE_RT_OK;
  });
}

} // extern "C"
