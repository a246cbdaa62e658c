//===- CApiSendRecv.cpp - the C ABI of a pipeline's sends and receives ----===//
//
// A send between stages goes one of three ways. Where both stages' devices
// have collectives of their own (GPUs with NCCL, each rank on its own), the
// bytes go device to device (Device::pairSend / pairRecv). Where both ranks
// are in this process on one GPU, the sender copies the tensor into a block
// of device memory and the host mailbox carries only the block's address
// and the marker it is ready at (Device::handOver / takeOver); the mailbox
// keeps its tags. Otherwise the bytes go through the host communicator's
// mailboxes, as they always did.
//
// The device way keeps the mailbox's meaning. A device pair delivers in the
// order sent and knows no tags, where a recv names its tag and a stage may
// receive in another order than its peer sent (a pipeline sends several
// values per micro-batch; nothing in the C ABI promises their order). So
// each device send first announces its tag, dtype and count over the host
// (a small message, in the direction's own sequence of tags), then sends
// its bytes. A recv takes the announcements in order: the one it asked
// for lands in its tensor; any other is received at once into a tensor of
// its own, kept until a recv asks for it. Every message is received in the
// order sent, which is what the device's library needs, and a recv that
// names a size or dtype other than what was sent is refused, as the
// mailbox refuses it.
//
//===----------------------------------------------------------------------===//

#include "runtime/capi/CApiInternal.h"

using namespace whale::rt;
using namespace whale::rt::capi;

namespace {

/// Host tags of the device way, above the plan's tags and the driver's
/// own (runtime/run, lib/Process*): a direction's k-th announcement is
/// kAnnouncementTags + k; a direction's set-up uses the two below it.
constexpr int64_t kAnnouncementTags = int64_t(1) << 50;
constexpr int64_t kPairIdTag = kAnnouncementTags - 1;
constexpr int64_t kPairDeviceTag = kAnnouncementTags - 2;

/// What a device send announces.
struct Announcement {
  int64_t tag = 0, dtype = 0, count = 0;
};

/// The rank of ctx's replica at `stage`.
bool peerAt(whale_rt_context *ctx, int32_t stage, int &rank) {
  if (stage < 0 || stage >= ctx->stages || stage == ctx->stage)
    return false;
  rank = ctx->grid[stage * ctx->replicas + ctx->replica];
  return true;
}

/// A host message to `peer` that is bookkeeping, not the rank's traffic.
Status tell(whale_rt_context *ctx, int peer, int64_t tag, DType dtype,
            const void *data, int64_t count) {
  Status st = ctx->comm->send(ctx->rank, peer, tag, dtype, data, count);
  if (st)
    ctx->comm->uncountSent(ctx->rank, count * dtypeSize(dtype));
  return st;
}

/// The direction from -> to, with whether it goes device to device (both
/// ranks' devices have collectives, on two physical devices) decided at
/// its first message. Only the two ranks take part in deciding (messages,
/// not a collective, so it cannot meet another collective of theirs):
/// where the peer is in another process, each tells the other its
/// (machine, device). Both directions between two ranks send the same two
/// facts, so whichever direction's message a side takes first, it reads
/// the same. A rank whose device has no collectives knows the answer (no)
/// without the peer's, so it only tells: its sends never wait, as host
/// sends never do; only a rank on a GPU waits, once per direction, for its
/// peer's first word.
Status directionOf(whale_rt_context *ctx, int from, int to,
                   whale_rt_context::DevicePair *&out) {
  whale_rt_context::DevicePair &pair = ctx->devicePairs[{from, to}];
  out = &pair;
  if (pair.decided)
    return Status::ok();
  const int peer = ctx->rank == from ? to : from;
  const int32_t mine[2] = {hostIdentity(), ctx->device->collectiveDevice()};
  int32_t theirs[2] = {mine[0], ctx->comm->collectiveDevice(peer)};
  if (theirs[1] == Communicator::kUnbound)
    return Status::invalid("rank " + std::to_string(peer) +
                           " has not been bound to the communicator yet");
  if (theirs[1] == Communicator::kElsewhere) {
    if (Status st = tell(ctx, peer, kPairDeviceTag, DType::I32, mine, 2); !st)
      return st;
    if (mine[1] < 0)
      theirs[1] = -1; // no collectives here: the answer is no either way
    else if (Status st = ctx->comm->recv(ctx->rank, peer, kPairDeviceTag,
                                         DType::I32, theirs, 2);
             !st)
      return st;
  }
  pair.onDevices = mine[1] >= 0 && theirs[1] >= 0 &&
                   (mine[0] != theirs[0] || mine[1] != theirs[1]);
  // A peer of this process on the same device (one in another process is
  // never taken for one: its word came by message).
  pair.shared = mine[1] >= 0 && ctx->comm->collectiveDevice(peer) == mine[1];
  pair.decided = true;
  return Status::ok();
}

/// The device's name for the direction from -> to.
std::string pairKey(int from, int to) {
  return "pair:" + std::to_string(from) + ">" + std::to_string(to);
}

/// A direction's set-up bytes from its sender to its receiver, by message.
Device::ShareFromFirst shareOverPair(whale_rt_context *ctx, int peer,
                                     bool sender) {
  return [ctx, peer, sender](char *bytes, int64_t count) -> Status {
    if (count % 4 != 0)
      return Status::internal("a device pair's set-up of " +
                              std::to_string(count) + " bytes");
    if (sender)
      return tell(ctx, peer, kPairIdTag, DType::I32, bytes, count / 4);
    return ctx->comm->recv(ctx->rank, peer, kPairIdTag, DType::I32, bytes,
                           count / 4);
  };
}

Status sendOnDevices(whale_rt_context *ctx, int peer,
                     whale_rt_context::DevicePair &pair, int64_t tag,
                     whale_rt_tensor *t) {
  const Announcement said{tag, static_cast<int64_t>(t->tensor.dtype()),
                          t->tensor.numel()};
  if (Status st = tell(ctx, peer, kAnnouncementTags + pair.announced,
                       DType::I64, &said, 3);
      !st)
    return st;
  ++pair.announced;
  return ctx->device->pairSend(pairKey(ctx->rank, peer), t->tensor.raw(),
                               t->tensor.bytes(),
                               shareOverPair(ctx, peer, /*sender=*/true));
}

Status recvOnDevices(whale_rt_context *ctx, int peer,
                     whale_rt_context::DevicePair &pair, int64_t tag,
                     whale_rt_tensor *out) {
  const std::string key = pairKey(peer, ctx->rank);
  const Device::ShareFromFirst share =
      shareOverPair(ctx, peer, /*sender=*/false);
  auto mismatch = [&](const Announcement &a) {
    return Status::invalid("recv: rank " + std::to_string(peer) + " sent " +
                           std::to_string(a.count) + " " +
                           dtypeName(static_cast<DType>(a.dtype)) +
                           " with tag " + std::to_string(tag) + " where " +
                           std::to_string(out->tensor.numel()) + " " +
                           dtypeName(out->tensor.dtype()) + " were expected");
  };
  if (auto it = pair.early.find(tag); it != pair.early.end()) {
    Tensor kept = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty())
      pair.early.erase(it);
    if (kept.dtype() != out->tensor.dtype() ||
        kept.numel() != out->tensor.numel())
      return mismatch({tag, static_cast<int64_t>(kept.dtype()), kept.numel()});
    return ctx->device->copy(out->tensor.raw(), kept.raw(), kept.bytes());
  }
  for (;;) {
    Announcement said;
    if (Status st =
            ctx->comm->recv(ctx->rank, peer, kAnnouncementTags + pair.taken,
                            DType::I64, &said, 3);
        !st)
      return st;
    ++pair.taken;
    if (said.dtype < 0 || said.dtype > static_cast<int64_t>(DType::I64) ||
        said.count < 0)
      return Status::internal("recv: rank " + std::to_string(peer) +
                              " announced a message of dtype " +
                              std::to_string(said.dtype) + " and " +
                              std::to_string(said.count) + " elements");
    if (said.tag == tag) {
      if (said.dtype != static_cast<int64_t>(out->tensor.dtype()) ||
          said.count != out->tensor.numel())
        return mismatch(said);
      return ctx->device->pairRecv(key, out->tensor.raw(), out->tensor.bytes(),
                                   share);
    }
    // Sent before the one asked for: received now, as the device pair
    // delivers in order, and kept for its own recv.
    Tensor early;
    if (Status st = Tensor::create(*ctx->device, static_cast<DType>(said.dtype),
                                   {said.count}, early);
        !st)
      return st;
    if (Status st =
            ctx->device->pairRecv(key, early.raw(), early.bytes(), share);
        !st)
      return st;
    pair.early[said.tag].push_back(std::move(early));
  }
}

/// What a shared device's send tells its receiver: the block, its marker,
/// and what the block holds.
struct HandedOver {
  int64_t block = 0, marker = 0, dtype = 0, count = 0;
};

Status sendShared(whale_rt_context *ctx, int peer, int64_t tag,
                  whale_rt_tensor *t) {
  HandedOver h{0, 0, static_cast<int64_t>(t->tensor.dtype()),
               t->tensor.numel()};
  if (Status st = ctx->device->handOver(t->tensor.raw(), t->tensor.bytes(),
                                        h.block, h.marker);
      !st)
    return st;
  return tell(ctx, peer, tag, DType::I64, &h, 4);
}

Status recvShared(whale_rt_context *ctx, int peer, int64_t tag,
                  whale_rt_tensor *out) {
  HandedOver h;
  if (Status st = ctx->comm->recv(ctx->rank, peer, tag, DType::I64, &h, 4); !st)
    return st;
  if (h.dtype < 0 || h.dtype > static_cast<int64_t>(DType::BF16) || h.count < 0)
    return Status::internal("recv: rank " + std::to_string(peer) +
                            " handed over a block of dtype " +
                            std::to_string(h.dtype) + " and " +
                            std::to_string(h.count) + " elements");
  const DType sent = static_cast<DType>(h.dtype);
  if (sent == out->tensor.dtype() && h.count == out->tensor.numel())
    return ctx->device->takeOver(h.block, h.marker, out->tensor.raw(),
                                 out->tensor.bytes());
  // Taken all the same, into a tensor of its own, so the block is freed.
  Tensor kept;
  Status st = Tensor::create(*ctx->device, sent, {h.count}, kept);
  if (st)
    st = ctx->device->takeOver(h.block, h.marker, kept.raw(), kept.bytes());
  if (!st)
    return st;
  return Status::invalid("recv: rank " + std::to_string(peer) + " sent " +
                         std::to_string(h.count) + " " + dtypeName(sent) +
                         " with tag " + std::to_string(tag) + " where " +
                         std::to_string(out->tensor.numel()) + " " +
                         dtypeName(out->tensor.dtype()) + " were expected");
}

} // namespace

whale_rt_status whale_rt_send(whale_rt_context *ctx, int32_t to_stage,
                              int64_t tag, whale_rt_tensor *t) {
  return guarded(ctx, [&]() -> whale_rt_status {
    if (whale_rt_status s = needComm(ctx, "send"))
      return s;
    int peer;
    if (!t || !peerAt(ctx, to_stage, peer))
      return ctx->invalid("send: no tensor, or stage " +
                          std::to_string(to_stage) + " is not another stage");
    CommScope scope(ctx, "send");
    whale_rt_context::DevicePair *pair = nullptr;
    if (Status st = directionOf(ctx, ctx->rank, peer, pair); !st)
      return ctx->fail(st);
    if (pair->onDevices)
      return ran(ctx, sendOnDevices(ctx, peer, *pair, tag, t));
    if (pair->shared)
      return ran(ctx, sendShared(ctx, peer, tag, t));
    HostData host(ctx, t, /*writeBack=*/false);
    if (Status st = host.load(); !st)
      return ctx->fail(st);
    Status st = ctx->comm->send(ctx->rank, peer, tag, t->tensor.dtype(),
                                host.as<void>(), t->tensor.numel());
    return st ? WHALE_RT_OK : ctx->fail(st);
  });
}

whale_rt_status whale_rt_recv(whale_rt_context *ctx, int32_t from_stage,
                              int64_t tag, whale_rt_tensor *out) {
  return guarded(ctx, [&]() -> whale_rt_status {
    if (whale_rt_status s = needComm(ctx, "recv"))
      return s;
    int peer;
    if (!out || !peerAt(ctx, from_stage, peer))
      return ctx->invalid("recv: no tensor, or stage " +
                          std::to_string(from_stage) + " is not another stage");
    CommScope scope(ctx, "recv");
    whale_rt_context::DevicePair *pair = nullptr;
    if (Status st = directionOf(ctx, peer, ctx->rank, pair); !st)
      return ctx->fail(st);
    if (pair->onDevices)
      return ran(ctx, recvOnDevices(ctx, peer, *pair, tag, out));
    if (pair->shared)
      return ran(ctx, recvShared(ctx, peer, tag, out));
    HostData host(ctx, out, /*writeBack=*/true);
    host.prepare();
    Status st = ctx->comm->recv(ctx->rank, peer, tag, out->tensor.dtype(),
                                host.as<void>(), out->tensor.numel());
    if (st)
      st = host.commit();
    return st ? WHALE_RT_OK : ctx->fail(st);
  });
}
