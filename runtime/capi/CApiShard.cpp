//===- CApiShard.cpp - the C ABI of tensor parallelism --------------------===//
//
// A shard group is `shards` consecutive replicas of a stage (the ranks of
// one split TaskGraph copy); a rank's part is its replica modulo `shards`.
// Parts are equal, or proportional to `weights` (uneven shards, placed by
// runtime/core/Parts.h) when an op passes them. Sharded parameters are
// initialized whole, exactly as on one device, and each rank keeps its
// part, so a split run starts from the same numbers.
//
//===----------------------------------------------------------------------===//

#include "runtime/capi/CApiInternal.h"
#include "runtime/core/Parts.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace whale::rt;
using namespace whale::rt::capi;
using whale::rt::partOf;
using whale::rt::PartRange;
using whale::rt::partUnits;

namespace whale::rt::capi {

bool shardGroupRanks(whale_rt_context *ctx, int32_t shards, bool peers,
                     std::vector<int> &ranks, int &position) {
  if (shards < 1 || ctx->replicas % shards != 0)
    return false;
  ranks.clear();
  int base = ctx->replica - ctx->replica % shards;
  int part = ctx->replica % shards;
  if (peers) {
    for (int r = part; r < ctx->replicas; r += shards)
      ranks.push_back(ctx->grid[ctx->stage * ctx->replicas + r]);
    position = ctx->replica / shards;
  } else {
    for (int j = 0; j < shards; ++j)
      ranks.push_back(ctx->grid[ctx->stage * ctx->replicas + base + j]);
    position = part;
  }
  return true;
}

} // namespace whale::rt::capi

namespace {

struct Group {
  std::vector<int> ranks;
  int position = 0;
};

bool shardGroup(whale_rt_context *ctx, int32_t shards, bool peers, Group &g) {
  return shardGroupRanks(ctx, shards, peers, g.ranks, g.position);
}

/// Copies `part` (the range `r` of `axis`) between a whole tensor and its
/// part (toPart: whole -> part).
void copyPart(char *whole, char *part, const Shape &wholeShape, int64_t axis,
              PartRange r, int64_t elem, bool toPart) {
  int64_t outer = 1, inner = elem;
  for (int64_t d = 0; d < axis; ++d)
    outer *= wholeShape[d];
  for (size_t d = axis + 1; d < wholeShape.size(); ++d)
    inner *= wholeShape[d];
  const int64_t block = r.size * inner;
  for (int64_t o = 0; o < outer; ++o) {
    char *w = whole + (o * wholeShape[axis] + r.offset) * inner;
    char *p = part + o * block;
    if (toPart)
      std::memcpy(p, w, block);
    else
      std::memcpy(w, p, block);
  }
}

/// Part `index`'s range of `whole` along `axis`, when `part` is that part
/// of it (the same shape but along `axis`).
/// `shape` with `axis` made `extent` long.
Shape withExtent(Shape shape, int64_t axis, int64_t extent) {
  if (axis >= 0 && axis < static_cast<int64_t>(shape.size()))
    shape[axis] = extent;
  return shape;
}

bool partRange(const Shape &whole, const Shape &part, int64_t axis,
               int64_t shards, const int64_t *weights, int64_t index,
               PartRange &r) {
  if (whole.size() != part.size() || axis < 0 ||
      axis >= static_cast<int64_t>(part.size()) ||
      !partOf(whole[axis], shards, weights, index, r) || r.size != part[axis])
    return false;
  for (size_t d = 0; d < part.size(); ++d)
    if (static_cast<int64_t>(d) != axis && whole[d] != part[d])
      return false;
  return true;
}

std::string partsText(int64_t shards, const int64_t *weights) {
  if (!weights)
    return std::to_string(shards) + " equal parts";
  std::string s = "parts weighted";
  for (int64_t i = 0; i < shards; ++i)
    s += (i ? ":" : " ") + std::to_string(weights[i]);
  return s;
}

whale_rt_status needGroup(whale_rt_context *ctx, const char *op, int32_t shards,
                          bool peers, Group &g) {
  if (!ctx->comm)
    return ctx->invalid(std::string(op) +
                        ": the context is not bound to a communicator");
  if (!shardGroup(ctx, shards, peers, g))
    return ctx->invalid(std::string(op) + ": " + std::to_string(ctx->replicas) +
                        " replicas cannot form groups of " +
                        std::to_string(shards));
  // The group's started collectives first: it pairs them by order.
  if (Status st = settleStarted(ctx, g.ranks); !st)
    return ctx->fail(st);
  return WHALE_RT_OK;
}

/// Sums `n` floats over the group, in place.
Status sumOver(whale_rt_context *ctx, const Group &g, float *data, int64_t n) {
  CommScope scope(ctx, "shard_sum");
  return ctx->comm->allReduce(ctx->rank, g.ranks, DType::F32, data, n);
}

/// `op` over the group on its devices (NCCL, or the GPU its members
/// share; `way` and `key` from deviceCollectives), on `data` in this
/// device's memory laid out as `parts`.
Status onGroupDevices(whale_rt_context *ctx, const Group &g, GroupWay way,
                      const std::string &key, Device::BucketOp op,
                      const char *what, float *data,
                      const std::vector<int64_t> &parts) {
  CommScope scope(ctx, what);
  return bucketOnDevices(ctx, g.ranks, way, key, op, data, parts);
}

/// A gather or an exchange of the group's parts on its devices: `slots`
/// slots of `slot` floats in device memory, which `fill` fills with this
/// member's, `op` moves, and whose slots from `first` on, as `shapes`,
/// are joined along `axis` into `out`.
Status slotsOnDevices(whale_rt_context *ctx, const Group &g, GroupWay way,
                      const std::string &key, Device::BucketOp op,
                      const char *what, int64_t slots, int64_t slot,
                      const std::function<Status(float *)> &fill, int64_t first,
                      const std::vector<Shape> &shapes, int64_t axis,
                      whale_rt_tensor *out) {
  Tensor buffer;
  Status st = Tensor::create(*ctx->device, DType::F32, {slots * slot}, buffer);
  float *base = st ? static_cast<float *>(buffer.raw()) : nullptr;
  if (st)
    st = fill(base);
  if (st)
    st = onGroupDevices(ctx, g, way, key, op, what, base,
                        std::vector<int64_t>(g.ranks.size(), slot));
  std::vector<View<const float>> views;
  for (size_t j = 0; st && j < shapes.size(); ++j)
    views.push_back({base + (first + int64_t(j)) * slot, shapes[j]});
  if (st)
    st = ctx->device->concat(views, axis, out->tensor.view<float>());
  return st;
}

/// Per row, the maximum over the group's classes, from each rank's.
Status maxOver(whale_rt_context *ctx, const Group &g, std::vector<float> &m) {
  CommScope scope(ctx, "all_gather");
  int64_t n = static_cast<int64_t>(m.size());
  std::vector<float> all(n * g.ranks.size());
  if (Status st = ctx->comm->allGather(ctx->rank, g.ranks, DType::F32, m.data(),
                                       n, all.data());
      !st)
    return st;
  for (size_t r = 0; r < g.ranks.size(); ++r)
    for (int64_t i = 0; i < n; ++i)
      m[i] = std::max(m[i], all[r * n + i]);
  return Status::ok();
}

/// Label i of labels whose host bytes are `host`.
int64_t labelAt(whale_rt_tensor *labels, HostData &host, int64_t i) {
  return labels->tensor.dtype() == DType::I32 ? host.as<const int32_t>()[i]
                                              : host.as<const int64_t>()[i];
}

/// The log of the softmax's normalizer of each row over the group's
/// classes (a distributed maximum, then a distributed sum).
Status groupLogSumExp(whale_rt_context *ctx, const Group &g,
                      const float *logits, int64_t rows, int64_t cols,
                      std::vector<float> &lse) {
  std::vector<float> m(rows, -std::numeric_limits<float>::infinity());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < cols; ++c)
      m[i] = std::max(m[i], logits[i * cols + c]);
  if (Status st = maxOver(ctx, g, m); !st)
    return st;
  lse.assign(rows, 0);
  for (int64_t i = 0; i < rows; ++i) {
    double s = 0;
    for (int64_t c = 0; c < cols; ++c)
      s += std::exp(static_cast<double>(logits[i * cols + c]) - m[i]);
    lse[i] = static_cast<float>(s);
  }
  if (Status st = sumOver(ctx, g, lse.data(), rows); !st)
    return st;
  for (int64_t i = 0; i < rows; ++i)
    lse[i] = m[i] + std::log(lse[i]);
  return Status::ok();
}

/// This rank's range of the classes, when it holds `cols` of them.
bool classesOf(int64_t shards, const int64_t *weights, int64_t position,
               int64_t cols, PartRange &mine) {
  const int64_t own = weights ? weights[position] : 1;
  if (own < 1 || cols % own != 0)
    return false;
  return partOf(cols / own * partUnits(shards, weights), shards, weights,
                position, mine) &&
         mine.size == cols;
}

whale_rt_status checkCrossEntropy(whale_rt_context *ctx, const char *op,
                                  whale_rt_tensor *logits,
                                  whale_rt_tensor *labels,
                                  whale_rt_tensor *out) {
  if (whale_rt_status s = needF32(ctx, op, {{"logits", logits}, {"out", out}}))
    return s;
  const Shape &sl = shapeOf(logits);
  if (!isIndex(labels) || sl.empty() ||
      Shape(sl.begin(), sl.end() - 1) != shapeOf(labels))
    return ctx->invalid(std::string(op) +
                        ": labels (i32 or i64) must have the logits' shape "
                        "without the class dimension");
  return WHALE_RT_OK;
}

} // namespace

extern "C" {

whale_rt_status whale_rt_param_shard(whale_rt_context *ctx, const char *name,
                                     int32_t init_kind, const double *init_args,
                                     int32_t num_args, int32_t rank,
                                     const int64_t *whole_shape, int32_t axis,
                                     int32_t shards, const int64_t *weights,
                                     whale_rt_tensor **out) {
  return guarded(ctx, [&]() -> whale_rt_status {
    PartRange r;
    if (!name || !out || rank < 1 || !whole_shape || num_args < 0 ||
        (num_args > 0 && !init_args) || axis < 0 || axis >= rank ||
        shards < 2 ||
        !partOf(whole_shape[axis], shards, weights, ctx->replica % shards, r))
      return ctx->invalid("param_shard: bad arguments");
    Shape whole(whole_shape, whole_shape + rank), part = whole;
    part[axis] = r.size;
    // The whole, as one device would make it, then this rank's part.
    return makeParameter(
        ctx, name, part, init_kind, num_args,
        [&](float *data, uint64_t key) {
          std::vector<float> all(numElements(whole));
          initParameter(all.data(), whole, init_kind, init_args, key);
          copyPart(reinterpret_cast<char *>(all.data()),
                   reinterpret_cast<char *>(data), whole, axis, r,
                   sizeof(float), /*toPart=*/true);
        },
        out);
  });
}

whale_rt_status whale_rt_all_gather(whale_rt_context *ctx, int32_t shards,
                                    const int64_t *weights, int64_t axis,
                                    whale_rt_tensor *in, whale_rt_tensor *out) {
  return traced(ctx, "all_gather", {out}, [&]() -> whale_rt_status {
    Group g;
    if (whale_rt_status s = needGroup(ctx, "all_gather", shards, false, g))
      return s;
    PartRange mine;
    if (!in || !out || in->tensor.dtype() != out->tensor.dtype() ||
        !partRange(shapeOf(out), shapeOf(in), axis, shards, weights, g.position,
                   mine))
      return ctx->invalid("all_gather: the input must be this rank's part "
                          "of the output along axis " +
                          std::to_string(axis) + ", of " +
                          partsText(shards, weights));
    // Every part travels in a slot the size of the largest, so one
    // fixed-size all-gather serves uneven parts too.
    const Shape &whole = shapeOf(out);
    const int64_t n = in->tensor.numel();
    const int64_t elem = in->tensor.bytes() / std::max<int64_t>(1, n);
    const int64_t perRow = mine.size > 0 ? n / mine.size : 0;
    std::vector<PartRange> parts(shards);
    int64_t slot = 0;
    for (int32_t j = 0; j < shards; ++j) {
      partOf(whole[axis], shards, weights, j, parts[j]);
      slot = std::max(slot, parts[j].size * perRow);
    }
    // On the group's devices: the parts gathered in slots in device memory
    // (member j's in slot j), then joined along the axis there.
    GroupWay way = GroupWay::Host;
    std::string key;
    if (Status st = deviceCollectives(ctx, g.ranks, way, key); !st)
      return ctx->fail(st);
    if (way != GroupWay::Host && in->tensor.dtype() == DType::F32) {
      std::vector<Shape> shapes;
      for (int32_t j = 0; j < shards; ++j)
        shapes.push_back(withExtent(whole, axis, parts[j].size));
      return ran(ctx, slotsOnDevices(
                          ctx, g, way, key, Device::BucketOp::GatherFromOwners,
                          "all_gather", shards, slot,
                          [&](float *base) {
                            return ctx->device->copy(base + g.position * slot,
                                                     in->tensor.raw(),
                                                     in->tensor.bytes());
                          },
                          0, shapes, axis, out));
    }
    // Staged in the context's host buffers; a slot's tail past a smaller
    // part travels unread.
    HostBuffers::Block send =
        ctx->hostBuffers.take(static_cast<size_t>(slot * elem));
    if (Status st = ctx->device->copyToHost(send.data(), in->tensor.raw(),
                                            in->tensor.bytes());
        !st)
      return ctx->fail(st);
    HostBuffers::Block all =
        ctx->hostBuffers.take(static_cast<size_t>(slot * elem) * shards);
    {
      CommScope scope(ctx, "all_gather");
      if (Status st =
              ctx->comm->allGather(ctx->rank, g.ranks, in->tensor.dtype(),
                                   send.data(), slot, all.data());
          !st)
        return ctx->fail(st);
    }
    HostData joined(ctx, out, /*writeBack=*/true);
    joined.prepare();
    for (int32_t j = 0; j < shards; ++j)
      copyPart(joined.as<char>(), all.data() + j * slot * elem, whole, axis,
               parts[j], elem, /*toPart=*/false);
    return ran(ctx, joined.commit());
  });
}

whale_rt_status whale_rt_all_to_all(whale_rt_context *ctx, int32_t shards,
                                    const int64_t *weights, int64_t split_axis,
                                    int64_t concat_axis, whale_rt_tensor *in,
                                    whale_rt_tensor *out) {
  return traced(ctx, "all_to_all", {out}, [&]() -> whale_rt_status {
    Group g;
    if (whale_rt_status s = needGroup(ctx, "all_to_all", shards, false, g))
      return s;
    if (!in || !out || in->tensor.dtype() != out->tensor.dtype())
      return ctx->invalid("all_to_all: needs an input and an output of one "
                          "dtype");
    // `in` is this rank's part along a of the whole that `out` holds along
    // a; `out` is its part along b of what `in` holds along b.
    const Shape &si = shapeOf(in), &so = shapeOf(out);
    const int64_t a = concat_axis, b = split_axis,
                  rank = static_cast<int64_t>(si.size());
    PartRange mineA, mineB;
    bool fits = si.size() == so.size() && a != b && a >= 0 && b >= 0 &&
                a < rank && b < rank &&
                partRange(so, withExtent(so, a, si[a]), a, shards, weights,
                          g.position, mineA) &&
                partRange(si, withExtent(si, b, so[b]), b, shards, weights,
                          g.position, mineB);
    for (int64_t d = 0; fits && d < rank; ++d)
      fits = d == a || d == b || si[d] == so[d];
    if (!fits)
      return ctx->invalid("all_to_all: " + shapeString(si) + " -> " +
                          shapeString(so) + " is not this rank's part along "
                          "axis " + std::to_string(a) +
                          " becoming its part along axis " +
                          std::to_string(b) + ", of " +
                          partsText(shards, weights));
    // Every chunk travels in a slot the size of the largest (member j's
    // rows along b of member k's part along a), as the gather's parts do.
    const int64_t n = in->tensor.numel();
    const int64_t elem = in->tensor.bytes() / std::max<int64_t>(1, n);
    std::vector<PartRange> alongA(shards), alongB(shards);
    int64_t maxA = 0, maxB = 0;
    for (int32_t j = 0; j < shards; ++j) {
      partOf(so[a], shards, weights, j, alongA[j]);
      partOf(si[b], shards, weights, j, alongB[j]);
      maxA = std::max(maxA, alongA[j].size);
      maxB = std::max(maxB, alongB[j].size);
    }
    const int64_t rest = si[a] * si[b] > 0 ? n / (si[a] * si[b]) : 0;
    const int64_t slot = maxA * maxB * rest;
    // On the group's devices: the chunks sliced into send slots, exchanged,
    // and the received slots joined along a, all in device memory.
    GroupWay way = GroupWay::Host;
    std::string key;
    if (Status st = deviceCollectives(ctx, g.ranks, way, key); !st)
      return ctx->fail(st);
    if (way != GroupWay::Host && in->tensor.dtype() == DType::F32) {
      std::vector<Shape> shapes;
      for (int32_t k = 0; k < shards; ++k)
        shapes.push_back(withExtent(so, a, alongA[k].size));
      return ran(ctx, slotsOnDevices(
                          ctx, g, way, key, Device::BucketOp::AllToAll,
                          "all_to_all", 2 * shards, slot,
                          [&](float *base) {
                            Status st;
                            for (int32_t j = 0; st && j < shards; ++j)
                              st = ctx->device->slice(
                                  in->tensor.raw(), si, sizeof(float), b,
                                  alongB[j].offset,
                                  alongB[j].offset + alongB[j].size,
                                  base + j * slot);
                            return st;
                          },
                          shards, shapes, a, out));
    }
    // The input read where it lies (on the host), its chunks staged in the
    // context's host buffers.
    HostData mine(ctx, in, /*writeBack=*/false);
    if (Status st = mine.load(); !st)
      return ctx->fail(st);
    const size_t slots = static_cast<size_t>(slot * elem) * shards;
    HostBuffers::Block send = ctx->hostBuffers.take(slots),
                       got = ctx->hostBuffers.take(slots);
    for (int32_t j = 0; j < shards; ++j)
      copyPart(mine.as<char>(), send.data() + j * slot * elem, si, b, alongB[j],
               elem, /*toPart=*/true);
    {
      CommScope scope(ctx, "all_to_all");
      if (Status st = ctx->comm->allToAll(ctx->rank, g.ranks,
                                          in->tensor.dtype(), send.data(),
                                          slot, got.data());
          !st)
        return ctx->fail(st);
    }
    HostData joined(ctx, out, /*writeBack=*/true);
    joined.prepare();
    for (int32_t k = 0; k < shards; ++k)
      copyPart(joined.as<char>(), got.data() + k * slot * elem, so, a,
               alongA[k], elem, /*toPart=*/false);
    return ran(ctx, joined.commit());
  });
}

namespace {

/// `out` = the range `mine` of `in` along `axis` (both checked by the
/// caller); nothing moves between ranks.
whale_rt_status copyRankPart(whale_rt_context *ctx, whale_rt_tensor *in,
                             whale_rt_tensor *out, int64_t axis,
                             const PartRange &mine) {
  int64_t elem = in->tensor.bytes() / std::max<int64_t>(1, in->tensor.numel());
  HostData whole(ctx, in, /*writeBack=*/false), part(ctx, out, true);
  if (Status st = whole.load(); !st)
    return ctx->fail(st);
  part.prepare();
  copyPart(whole.as<char>(), part.as<char>(), shapeOf(in), axis, mine, elem,
           /*toPart=*/true);
  return ran(ctx, part.commit());
}

} // namespace

whale_rt_status whale_rt_shard_slice(whale_rt_context *ctx, int32_t shards,
                                     const int64_t *weights, int64_t axis,
                                     whale_rt_tensor *in,
                                     whale_rt_tensor *out) {
  return traced(ctx, "shard_slice", {out}, [&]() -> whale_rt_status {
    PartRange mine;
    if (!in || !out || in->tensor.dtype() != out->tensor.dtype() ||
        shards < 2 || ctx->replicas % shards != 0 ||
        !partRange(shapeOf(in), shapeOf(out), axis, shards, weights,
                   ctx->replica % shards, mine))
      return ctx->invalid("shard_slice: the output must be this rank's part "
                          "of the input along axis " +
                          std::to_string(axis) + ", of " +
                          partsText(shards, weights) +
                          ", in a group that exists");
    return copyRankPart(ctx, in, out, axis, mine);
  });
}

whale_rt_status whale_rt_shard_slice_shared(whale_rt_context *ctx,
                                            int32_t shards, int32_t parts,
                                            int64_t axis, whale_rt_tensor *in,
                                            whale_rt_tensor *out) {
  return traced(ctx, "shard_slice", {out}, [&]() -> whale_rt_status {
    PartRange mine;
    if (!in || !out || in->tensor.dtype() != out->tensor.dtype() ||
        shards < 2 || parts < 1 || parts >= shards || shards % parts != 0 ||
        ctx->replicas % shards != 0 ||
        !partRange(shapeOf(in), shapeOf(out), axis, parts, nullptr,
                   (ctx->replica % shards) * parts / shards, mine))
      return ctx->invalid(
          "shard_slice: the output must be one of " + std::to_string(parts) +
          " equal parts of the input along axis " + std::to_string(axis) +
          ", each held by " + std::to_string(parts > 0 ? shards / parts : 0) +
          " of a group of " + std::to_string(shards) + " ranks that exists");
    return copyRankPart(ctx, in, out, axis, mine);
  });
}

whale_rt_status whale_rt_shard_sum(whale_rt_context *ctx, int32_t shards,
                                   whale_rt_tensor *in, whale_rt_tensor *out) {
  return traced(ctx, "shard_sum", {out}, [&]() -> whale_rt_status {
    Group g;
    if (whale_rt_status s = needGroup(ctx, "shard_sum", shards, false, g))
      return s;
    if (whale_rt_status s =
            needF32(ctx, "shard_sum", {{"in", in}, {"out", out}}))
      return s;
    if (whale_rt_status s = needShape(ctx, "shard_sum", out, shapeOf(in)))
      return s;
    Status st = ctx->device->copy(out->tensor.raw(), in->tensor.raw(),
                                  in->tensor.bytes());
    // On the group's devices the sum happens in place in device memory.
    GroupWay way = GroupWay::Host;
    std::string key;
    if (st)
      st = deviceCollectives(ctx, g.ranks, way, key);
    if (st && way != GroupWay::Host)
      st = onGroupDevices(ctx, g, way, key, Device::BucketOp::AllReduce,
                          "shard_sum", out->tensor.view<float>().data,
                          {out->tensor.numel()});
    if (!st || way != GroupWay::Host)
      return ran(ctx, st);
    HostData sum(ctx, out, /*writeBack=*/true);
    if (st)
      st = sum.load();
    if (st)
      st = sumOver(ctx, g, sum.as<float>(), out->tensor.numel());
    if (st)
      st = sum.commit();
    return ran(ctx, st);
  });
}

whale_rt_status whale_rt_all_reduce_peers(whale_rt_context *ctx, int32_t shards,
                                          int32_t num_tensors,
                                          whale_rt_tensor *const *ts) {
  return guarded(ctx, [&]() -> whale_rt_status {
    Group g;
    if (whale_rt_status s = needGroup(ctx, "all_reduce", shards, true, g))
      return s;
    if (num_tensors < 0 || (num_tensors > 0 && !ts))
      return ctx->invalid("all_reduce: bad tensors");
    if (g.ranks.size() == 1)
      return WHALE_RT_OK;
    return allReduceBucket(ctx, g.ranks, num_tensors, ts);
  });
}

whale_rt_status
whale_rt_sharded_cross_entropy(whale_rt_context *ctx, int32_t shards,
                               const int64_t *weights, whale_rt_tensor *logits,
                               whale_rt_tensor *labels, whale_rt_tensor *out) {
  return traced(ctx, "sharded_cross_entropy", {out}, [&]() -> whale_rt_status {
    Group g;
    if (whale_rt_status s =
            needGroup(ctx, "sharded_cross_entropy", shards, false, g))
      return s;
    if (whale_rt_status s = checkCrossEntropy(ctx, "sharded_cross_entropy",
                                              logits, labels, out))
      return s;
    if (whale_rt_status s =
            needShape(ctx, "sharded_cross_entropy", out, shapeOf(labels)))
      return s;
    const int64_t cols = shapeOf(logits).back(), rows = out->tensor.numel();
    PartRange mine;
    if (!classesOf(shards, weights, g.position, cols, mine))
      return ctx->invalid("sharded_cross_entropy: " + std::to_string(cols) +
                          " classes are no part of " +
                          partsText(shards, weights));
    const int64_t first = mine.offset,
                  classes = cols * partUnits(shards, weights) /
                            (weights ? weights[g.position] : 1);
    HostData hx(ctx, logits, false), hy(ctx, labels, false),
        hloss(ctx, out, true);
    if (Status st = hx.load(); !st)
      return ctx->fail(st);
    if (Status st = hy.load(); !st)
      return ctx->fail(st);
    hloss.prepare();
    const float *x = hx.as<const float>();
    std::vector<float> lse;
    if (Status st = groupLogSumExp(ctx, g, x, rows, cols, lse); !st)
      return ctx->fail(st);
    // The label's logit lives on one rank; the others add zero.
    std::vector<float> picked(rows, 0);
    for (int64_t i = 0; i < rows; ++i) {
      int64_t y = labelAt(labels, hy, i);
      if (y < 0 || y >= classes)
        return ctx->invalid("sharded_cross_entropy: label " +
                            std::to_string(y) + " is not a class in [0, " +
                            std::to_string(classes) + ")");
      if (y >= first && y < first + cols)
        picked[i] = x[i * cols + (y - first)];
    }
    if (Status st = sumOver(ctx, g, picked.data(), rows); !st)
      return ctx->fail(st);
    float *loss = hloss.as<float>();
    for (int64_t i = 0; i < rows; ++i)
      loss[i] = lse[i] - picked[i];
    return ran(ctx, hloss.commit());
  });
}

whale_rt_status whale_rt_sharded_cross_entropy_grad(
    whale_rt_context *ctx, int32_t shards, const int64_t *weights,
    whale_rt_tensor *logits, whale_rt_tensor *labels, whale_rt_tensor *dloss,
    whale_rt_tensor *out) {
  return traced(
      ctx, "sharded_cross_entropy_grad", {out}, [&]() -> whale_rt_status {
        Group g;
        if (whale_rt_status s =
                needGroup(ctx, "sharded_cross_entropy_grad", shards, false, g))
          return s;
        if (whale_rt_status s = checkCrossEntropy(
                ctx, "sharded_cross_entropy_grad", logits, labels, out))
          return s;
        if (whale_rt_status s =
                needF32(ctx, "sharded_cross_entropy_grad", {{"dloss", dloss}}))
          return s;
        if (shapeOf(dloss) != shapeOf(labels) ||
            shapeOf(out) != shapeOf(logits))
          return ctx->invalid(
              "sharded_cross_entropy_grad: dloss must be shaped "
              "like the labels and the output like the logits");
        const int64_t cols = shapeOf(logits).back(),
                      rows = labels->tensor.numel();
        PartRange mine;
        if (!classesOf(shards, weights, g.position, cols, mine))
          return ctx->invalid(
              "sharded_cross_entropy_grad: " + std::to_string(cols) +
              " classes are no part of " + partsText(shards, weights));
        const int64_t first = mine.offset;
        HostData hx(ctx, logits, false), hy(ctx, labels, false),
            hdl(ctx, dloss, false), hdx(ctx, out, true);
        for (HostData *h : {&hx, &hy, &hdl})
          if (Status st = h->load(); !st)
            return ctx->fail(st);
        hdx.prepare();
        const float *x = hx.as<const float>();
        const float *dl = hdl.as<const float>();
        float *dx = hdx.as<float>();
        std::vector<float> lse;
        if (Status st = groupLogSumExp(ctx, g, x, rows, cols, lse); !st)
          return ctx->fail(st);
        for (int64_t i = 0; i < rows; ++i) {
          int64_t y = labelAt(labels, hy, i) - first;
          for (int64_t c = 0; c < cols; ++c) {
            float p = std::exp(x[i * cols + c] - lse[i]);
            dx[i * cols + c] = (p - (c == y ? 1.0f : 0.0f)) * dl[i];
          }
        }
        return ran(ctx, hdx.commit());
      });
}

whale_rt_status whale_rt_clip_grad_norm_sharded(whale_rt_context *ctx,
                                                int32_t group, int32_t shards,
                                                int32_t num_grads,
                                                whale_rt_tensor *const *grads,
                                                const int32_t *sharded,
                                                double max_norm, double *norm) {
  return guarded(ctx, [&]() -> whale_rt_status {
    Group g;
    if (whale_rt_status s = needGroup(ctx, "clip_grad_norm", shards, false, g))
      return s;
    std::vector<int> across;
    if (group >= 0 && !groupRanks(ctx, group, across))
      return ctx->invalid("clip_grad_norm: bad group");
    if (num_grads < 0 || (num_grads > 0 && (!grads || !sharded)) ||
        !(max_norm > 0))
      return ctx->invalid("clip_grad_norm: needs gradients, which are sharded, "
                          "and max_norm > 0");
    // Whole gradients count once; the group's parts add up to their whole.
    std::vector<View<float>> partViews;
    for (int32_t i = 0; i < num_grads; ++i)
      if (sharded[i] && grads[i] && grads[i]->tensor.dtype() == DType::F32)
        partViews.push_back(grads[i]->tensor.view<float>());
    double parts = 0;
    if (Status st = ctx->device->sumSquares(partViews, parts); !st)
      return ctx->fail(st);
    return clipCombined(
        ctx, num_grads, grads, max_norm, norm, [&](double &squares) {
          double total = parts;
          if (Status st = sumOverRanks(ctx, g.ranks, total); !st)
            return st;
          squares = squares - parts + total;
          return sumOverRanks(ctx, across, squares);
        });
  });
}

} // extern "C"
