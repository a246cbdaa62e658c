//===- CApiInternal.h - what the C ABI's files share -------------*- C++
//-*-===//
//
// The context and tensor behind the C handles, and the checks every entry
// point makes at the boundary. Private to runtime/CApi*.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CAPI_CAPIINTERNAL_H
#define WHALE_RUNTIME_CAPI_CAPIINTERNAL_H

#include "runtime/WhaleRuntime.h"

#include "runtime/comm/CollectiveQueue.h"
#include "runtime/comm/Communicator.h"
#include "runtime/core/Device.h"
#include "runtime/core/HostBuffers.h"
#include "runtime/core/Profiler.h"
#include "runtime/core/Tensor.h"
#include "runtime/cpu/CpuDevice.h"

#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <string>
#include <vector>

using whale::rt::Device;
using whale::rt::Status;
using whale::rt::Tensor;

struct whale_rt_tensor {
  Tensor tensor;
  bool host = true; ///< the host may address the memory (not a GPU's)
};

/// Parameters' gather started and not yet waited for (ZeRO stage 3): the
/// bucket the rank's collective thread gathers, each owner's part in turn
/// (`order`: the parameters in the bucket's order, `counts` their
/// elements); or, where it gathers at the wait, what it needs then.
struct whale_rt_started_gather {
  std::shared_ptr<whale::rt::HostBuffers::Block> bucket;
  std::vector<int32_t> order;
  std::vector<int64_t> counts;
  /// In `order`: whether the parameter travels in bf16 (half the words).
  std::vector<bool> bf16;
  std::vector<int32_t> bf16Flags; ///< as given, for a gather at the wait
  int32_t group = 0, shards = 0;
  std::vector<whale_rt_tensor *> params;
  std::vector<int32_t> owners;
};

/// An all-reduce started and not yet waited for: the bucket the rank's
/// collective thread sums (or, on devices with collectives of their own,
/// the device's packed copy and the device's ticket), and the tensors its
/// sums go back to.
struct whale_rt_started_all_reduce {
  std::shared_ptr<whale::rt::HostBuffers::Block> bucket;
  /// Where the sums go back: every tensor of an all-reduce; of a reduce to
  /// owners only this rank's part, the elements from `from` on (the
  /// others' tensors were freed once packed: nothing reads them here).
  std::vector<whale_rt_tensor *> tensors;
  int64_t from = 0;
  std::unique_ptr<Tensor> onDevice;
  int64_t ticket = 0;
};

struct whale_rt_context {
  std::unique_ptr<Device> device;
  uint64_t seed = 0;
  std::string lastError;
  std::map<std::string, std::unique_ptr<whale_rt_tensor>> params;
  /// Handles without values of the parameters other members hold
  /// (whale_rt_param_elsewhere), by name, the same from step to step.
  std::map<std::string, std::unique_ptr<whale_rt_tensor>> heldElsewhere;
  std::map<whale_rt_tensor *, std::unique_ptr<whale_rt_tensor>> tensors;
  /// Optimizer state per parameter (momentum; Adam's two moments), on the
  /// device so it counts against its memory.
  std::map<whale_rt_tensor *, std::vector<std::unique_ptr<whale_rt_tensor>>>
      optimizerState;
  /// When tracing: every op's time, and the first op whose output held a
  /// NaN or an infinity.
  std::shared_ptr<whale::rt::Profiler> profiler;
  int traceTrack = 0; ///< compute; communication is the next track
  int64_t site = -1;  ///< the op being run (whale_rt_set_site), for traces
  /// Where the context sits in a plan (whale_rt_context_bind).
  whale::rt::Communicator *comm = nullptr;
  int rank = 0, stage = 0, replica = 0, stages = 1, replicas = 1;
  std::vector<int> grid; ///< stage * replicas + replica -> rank
  std::string firstNonFinite;
  /// Per group (its ranks, joined): how its collectives run
  /// (capi::GroupWay).
  std::map<std::string, int> deviceCollectiveGroups;
  /// Sends between stages, per direction (sender, receiver): whether it
  /// goes device to device (decided at its first message), and there how
  /// many messages this rank announced or took, and those it received
  /// before a recv asked for them, by tag, in order.
  struct DevicePair {
    /// onDevices: through the devices' library; shared: both ranks in this
    /// process on one device, a message a block handed over.
    bool decided = false, onDevices = false, shared = false;
    int64_t announced = 0, taken = 0;
    std::map<int64_t, std::deque<whale::rt::Tensor>> early;
  };
  std::map<std::pair<int, int>, DevicePair> devicePairs;
  /// Set by the driver before each train step.
  int64_t step = 1;
  double lrScale = 1.0;
  /// Whether the step trains (dropout drops) and the global batch's row of
  /// the rank's first input row (whale_rt_set_rows).
  bool training = false;
  int64_t firstRow = 0;
  /// While a step is probed or captured (whale_rt_step_capture_*): the op
  /// during which the device first found it could not hold the step.
  bool watchCapture = false;
  std::string captureOp;
  std::string captureWhy; ///< what whale_rt_step_capture_blocker returns
  /// Between a capture's begin and its end: the tensors there were before
  /// it, so that dropping an unfinished capture frees what its step made.
  bool captureOpen = false;
  std::set<whale_rt_tensor *> beforeCapture;
  /// Host staging memory for collectives, kept from step to step.
  whale::rt::HostBuffers hostBuffers;

  /// Collectives started and not yet waited for, by request
  /// (whale_rt_all_reduce_start). Last, so that its thread is joined before
  /// anything it reads goes.
  std::map<int64_t, whale_rt_started_all_reduce> startedAllReduces;
  std::map<int64_t, whale_rt_started_gather> startedGathers;
  /// The requests of gathers done at their wait count down from -1.
  int64_t deferredGathers = 0;
  std::unique_ptr<whale::rt::CollectiveQueue> started;

  whale_rt_status fail(const Status &s) {
    lastError = s.message();
    switch (s.code()) {
    case Status::Code::Ok:
      return WHALE_RT_OK;
    case Status::Code::OutOfMemory:
      return WHALE_RT_OUT_OF_MEMORY;
    case Status::Code::InvalidArgument:
      return WHALE_RT_INVALID_ARGUMENT;
    case Status::Code::Internal:
      return WHALE_RT_INTERNAL;
    }
    return WHALE_RT_INTERNAL;
  }
  whale_rt_status invalid(const std::string &msg) {
    return fail(Status::invalid(msg));
  }
};

namespace whale::rt::capi {

inline bool dtypeFromAbi(int32_t d, DType &out) {
  switch (d) {
  case WHALE_RT_F32:
    out = DType::F32;
    return true;
  case WHALE_RT_F64:
    out = DType::F64;
    return true;
  case WHALE_RT_I32:
    out = DType::I32;
    return true;
  case WHALE_RT_I64:
    out = DType::I64;
    return true;
  case WHALE_RT_BF16:
    out = DType::BF16;
    return true;
  default:
    return false;
  }
}

inline const Shape &shapeOf(whale_rt_tensor *t) { return t->tensor.shape(); }

/// Checks that every tensor is present and f32; names the op and argument.
inline whale_rt_status
needF32(whale_rt_context *ctx, const char *op,
        std::initializer_list<std::pair<const char *, whale_rt_tensor *>> ts) {
  for (const auto &[name, t] : ts) {
    if (!t)
      return ctx->invalid(std::string(op) + ": '" + name + "' is null");
    if (t->tensor.dtype() != DType::F32)
      return ctx->invalid(std::string(op) + ": '" + name + "' is " +
                          dtypeName(t->tensor.dtype()) + ", expected f32");
  }
  return WHALE_RT_OK;
}

/// A matmul's types: its inputs all f32, or all bf16 (amp's storage: then
/// `bf16` is set); each output present is f32, or bf16 when the inputs are.
inline whale_rt_status matmulTypes(
    whale_rt_context *ctx, const char *op,
    std::initializer_list<std::pair<const char *, whale_rt_tensor *>> inputs,
    std::initializer_list<std::pair<const char *, whale_rt_tensor *>> outputs,
    bool &bf16) {
  bf16 = false;
  for (const auto &[name, t] : inputs)
    if (!t)
      return ctx->invalid(std::string(op) + ": '" + name + "' is null");
  bf16 = inputs.begin()->second->tensor.dtype() == DType::BF16;
  const DType want = bf16 ? DType::BF16 : DType::F32;
  for (const auto &[name, t] : inputs)
    if (t->tensor.dtype() != want)
      return ctx->invalid(std::string(op) + ": '" + name + "' is " +
                          dtypeName(t->tensor.dtype()) + ", expected " +
                          dtypeName(want) + " as '" + inputs.begin()->first +
                          "' is");
  for (const auto &[name, t] : outputs) {
    if (!t)
      continue;
    DType d = t->tensor.dtype();
    if (d != DType::F32 && !(bf16 && d == DType::BF16))
      return ctx->invalid(std::string(op) + ": '" + name + "' is " +
                          dtypeName(d) + ", expected f32" +
                          (bf16 ? " or bf16" : ""));
  }
  return WHALE_RT_OK;
}

/// A matmul result as the device's MixedOut (null stays null).
inline MixedOut mixedOut(whale_rt_tensor *t) {
  return MixedOut{t->tensor.raw(), t->tensor.dtype(), t->tensor.shape()};
}

inline whale_rt_status needShape(whale_rt_context *ctx, const char *op,
                                 whale_rt_tensor *out, const Shape &want) {
  if (shapeOf(out) != want)
    return ctx->invalid(std::string(op) + ": the output is " +
                        shapeString(shapeOf(out)) + " but the result is " +
                        shapeString(want));
  return WHALE_RT_OK;
}

/// The i32 scalar `position` a decoding step's op reads (>= 0), in
/// `first` (CApiDecode.cpp).
whale_rt_status readPosition(whale_rt_context *ctx, const char *op,
                             whale_rt_tensor *position, int64_t &first);

inline bool isIndex(whale_rt_tensor *t) {
  return t &&
         (t->tensor.dtype() == DType::I32 || t->tensor.dtype() == DType::I64);
}

/// A parameter's initial values from its initializer and its name's key.
void initParameter(float *data, const Shape &shape, int32_t init_kind,
                   const double *init_args, uint64_t key);
/// The parameter `name` of `shape`: the one ctx already has (checked to
/// have that shape), or a new one whose values `fill` writes from the
/// name's key in the context's seed, after checking the initializer.
whale_rt_status
makeParameter(whale_rt_context *ctx, const char *name, const Shape &shape,
              int32_t init_kind, int32_t num_args,
              const std::function<void(float *data, uint64_t key)> &fill,
              whale_rt_tensor **out);

/// Times a communication op on the rank's communication track.
struct CommScope {
  CommScope(whale_rt_context *ctx, const char *name)
      : scope(ctx->profiler.get(), name, "communication", ctx->traceTrack + 1,
              ctx->site) {}
  Profiler::Scope scope;
};

/// The ranks of ctx's group of `kind` (WHALE_RT_GROUP_*), in order.
bool groupRanks(whale_rt_context *ctx, int32_t kind, std::vector<int> &out);
/// The shard group of `shards` around ctx, or (peers) the ranks of its
/// stage that hold the same part (its data-parallel peers); `position` is
/// ctx's place in it. False when the replicas do not split into such groups.
bool shardGroupRanks(whale_rt_context *ctx, int32_t shards, bool peers,
                     std::vector<int> &ranks, int &position);
/// The ranks of `group` (WHALE_RT_GROUP_*; `shards` for shard peers) around
/// ctx, and ctx's position among them; false for an unknown group or
/// shards that do not divide the replicas.
bool collectiveGroup(whale_rt_context *ctx, int32_t group, int32_t shards,
                     std::vector<int> &ranks, int &position);
/// For a group cut into sharding groups (WHALE_RT_GROUP_SHARDING): the
/// members at ctx's position in every sharding group, ctx among them, in
/// order; empty for a group not cut. False for a bad group or size.
bool shardingCopies(whale_rt_context *ctx, int32_t group, int32_t shards,
                    std::vector<int> &copies);
/// Waits for the collectives ctx started over `ranks` (whale_rt_all_reduce_
/// start): a blocking collective over the same group must come after them.
Status settleStarted(whale_rt_context *ctx, const std::vector<int> &ranks);
/// Ends the all-reduces a failed step started and never waited for (their
/// buckets go with them): a new step starts with none.
void forgetStarted(whale_rt_context *ctx);

/// Clips f32 gradients to a global norm of max_norm, their local sum of
/// squares first handed to `combine` (which adds the other ranks'). With
/// no `combine` and no `norm` to report, the device clips on its own
/// (Device::clipNorm: the host does not wait for the norm).
whale_rt_status clipCombined(whale_rt_context *ctx, int32_t num_grads,
                             whale_rt_tensor *const *grads, double max_norm,
                             double *norm,
                             const std::function<Status(double &)> &combine);
/// Sums one double over `ranks` in place (nothing to do for one rank).
Status sumOverRanks(whale_rt_context *ctx, const std::vector<int> &ranks,
                    double &value);

/// 32-bit words of a gathered parameter of `n` elements in a bucket: n in
/// f32, its bf16 halves two to a word (an odd count rounded up).
inline int64_t gatheredWords(int64_t n, bool bf16) {
  return bf16 ? (n + 1) / 2 : n;
}
/// A gathered parameter into the bucket at `words` (host memory): its f32
/// values, or rounded to bf16 (to nearest, ties to even) two to a word.
Status packGathered(whale_rt_context *ctx, Tensor &param, bool bf16,
                    float *words);
/// And out of it into `out` (the bf16 halves widened exactly).
Status unpackGathered(whale_rt_context *ctx, const float *words, bool bf16,
                      Tensor &out);
/// Fails with the op's name when ctx is not bound to a communicator.
whale_rt_status needComm(whale_rt_context *ctx, const char *op);

/// This machine, as a number the members of a group compare.
int32_t hostIdentity();
/// How a group's collectives run.
enum class GroupWay {
  Host,    ///< through the host communicator
  Library, ///< the devices' library (NCCL): each member on a GPU of its own
  Shared,  ///< in the memory of one GPU its members share, all in this
           ///< process (runtime/comm/SharedDeviceGroup.h)
};
/// How `ranks` reduce, and the group's key for the device's library.
Status deviceCollectives(whale_rt_context *ctx, const std::vector<int> &ranks,
                         GroupWay &way, std::string &key);
/// `op` on `data` (this rank's device memory, laid out as `parts`) over
/// `ranks` on their devices, as `way` (Library or Shared) says.
Status bucketOnDevices(whale_rt_context *ctx, const std::vector<int> &ranks,
                       GroupWay way, const std::string &key,
                       Device::BucketOp op, float *data,
                       const std::vector<int64_t> &parts);

/// The tensors ctx owns (owners[i] == position) of a reduction to owners
/// over a sharding group, summed over its `copies` (shardingCopies): the
/// other sharding groups' owners of the same tensors. Nothing to do for
/// fewer than two copies.
whale_rt_status sumOverCopies(whale_rt_context *ctx,
                              const std::vector<int> &copies, int position,
                              int32_t num_tensors, whale_rt_tensor *const *ts,
                              const int32_t *owners);
/// A bucket as it is packed: its tensors in packing order, and for a
/// reduce to owners each member's part (the tensors it owns, member after
/// member in group order).
struct Bucket {
  std::vector<whale_rt_tensor *> tensors;
  std::vector<int64_t> parts; ///< empty: every member gets every sum
  int64_t total = 0;          ///< elements
};
/// Frees a tensor's memory and leaves its handle without elements (shape
/// [0]): a value the program still names that nothing on this rank reads
/// again (a gradient sent to its owner).
inline void dropStorage(whale_rt_tensor *t) {
  Tensor empty;
  (void)Tensor::borrow(t->tensor.dtype(), {0}, nullptr, empty);
  t->tensor = std::move(empty);
}
/// Checks a bucket's tensors (f32) and owners (null: an all-reduce; else
/// each tensor's owner, a position among `members`) and lays it out.
whale_rt_status makeBucket(whale_rt_context *ctx, const char *op,
                           size_t members, int32_t num_tensors,
                           whale_rt_tensor *const *ts, const int32_t *owners,
                           Bucket &bucket);
/// The bucket's parts as device collectives take them: an all-reduce's
/// whole as one part.
inline std::vector<int64_t> devicePartsOf(const Bucket &bucket) {
  return bucket.parts.empty() ? std::vector<int64_t>{bucket.total}
                              : bucket.parts;
}
/// ctx's position among `ranks`.
int positionOf(whale_rt_context *ctx, const std::vector<int> &ranks);
/// Sums a bucket over `ranks` in place: every tensor on every member, or,
/// with parts, each on its owner (on devices with collectives of their
/// own, every tensor on every member: the owners get theirs too).
whale_rt_status sumBucket(whale_rt_context *ctx, const std::vector<int> &ranks,
                          const Bucket &bucket);
/// A bucket's tensors copied one after another into `packed` (a block of
/// the context's host buffers), and back.
Status packBucket(whale_rt_context *ctx, const Bucket &bucket,
                  whale::rt::HostBuffers::Block &packed);
Status unpackBucket(whale_rt_context *ctx,
                    const std::vector<whale_rt_tensor *> &tensors,
                    const float *packed);
/// A bucket's tensors packed into one tensor of the device's, and back.
Status packOnDevice(whale_rt_context *ctx, const Bucket &bucket,
                    Tensor &packed);
Status unpackOnDevice(whale_rt_context *ctx,
                      const std::vector<whale_rt_tensor *> &tensors,
                      Tensor &packed);
/// Hands position 0's `count` bytes to every member of `ranks` over the
/// host communicator (a device group's set-up).
Device::ShareFromFirst shareFromFirst(whale_rt_context *ctx,
                                      const std::vector<int> &ranks);
/// Sums f32 tensors over `ranks` as one bucket, in place.
whale_rt_status allReduceBucket(whale_rt_context *ctx,
                                const std::vector<int> &ranks,
                                int32_t num_tensors,
                                whale_rt_tensor *const *ts);

/// Ids or labels as the device reads them (the caller checked isIndex).
inline IndexView indexView(whale_rt_tensor *t) {
  return IndexView{t->tensor.raw(), t->tensor.shape(),
                   t->tensor.dtype() == DType::I64};
}

/// A kernel's status as the C ABI's.
inline whale_rt_status ran(whale_rt_context *ctx, const Status &st) {
  return st ? WHALE_RT_OK : ctx->fail(st);
}

/// A tensor's bytes where host code can read and write them: the tensor's
/// own memory on a host device; on another (a GPU), a host copy read from
/// the device first and, when `writeBack`, written back by commit(). The
/// communicator and the sharded ops work on host memory, so this is how
/// they serve every device.
class HostData {
public:
  HostData(whale_rt_context *ctx, whale_rt_tensor *t, bool writeBack)
      : ctx(ctx), t(t), writeBack(writeBack) {}
  /// Reads the device's bytes when they are not the host's.
  Status load() {
    if (ctx->device->hostAddressable() || !t)
      return Status::ok();
    copy.resize(static_cast<size_t>(t->tensor.bytes()));
    return ctx->device->copyToHost(copy.data(), t->tensor.raw(),
                                   t->tensor.bytes());
  }
  /// As load, for a tensor every byte of which will be written.
  void prepare() {
    if (!ctx->device->hostAddressable() && t)
      copy.resize(static_cast<size_t>(t->tensor.bytes()));
  }
  template <class T> T *as() {
    return reinterpret_cast<T *>(ctx->device->hostAddressable()
                                     ? static_cast<char *>(t->tensor.raw())
                                     : copy.data());
  }
  Status commit() {
    if (ctx->device->hostAddressable() || !writeBack || !t)
      return Status::ok();
    return ctx->device->copyFromHost(t->tensor.raw(), copy.data(),
                                     t->tensor.bytes());
  }

private:
  whale_rt_context *ctx;
  whale_rt_tensor *t;
  bool writeBack;
  std::vector<char> copy;
};

/// Whether the device has found nothing yet that keeps the step from
/// being captured (StepCapture.h); then, after an op, names the op where
/// it now has.
bool captureClear(whale_rt_context *ctx);
void noteCaptureOp(whale_rt_context *ctx, const char *op);

template <class Fn> whale_rt_status guarded(whale_rt_context *ctx, Fn fn) {
  if (!ctx)
    return WHALE_RT_INVALID_ARGUMENT;
  try {
    return fn();
  } catch (const std::bad_alloc &) {
    return ctx->fail(Status::outOfMemory(ctx->device->name() +
                                         ": the system ran out of memory"));
  } catch (const std::exception &e) {
    return ctx->fail(Status::internal(e.what()));
  }
}

/// As guarded, and when the context traces: records the op's time and
/// notes the first op whose outputs hold a NaN or an infinity.
/// False when an f32 or bf16 output holds a NaN or an infinity. A bf16
/// output is widened to scratch first (only under a trace, which is where
/// the check runs); scratch the device cannot spare skips the check.
inline bool outputFinite(whale_rt_context *ctx, const Tensor &t) {
  bool finite = true;
  if (t.dtype() == DType::F32) {
    ctx->device->allFinite(t.cview<float>(), finite);
  } else if (t.dtype() == DType::BF16) {
    Tensor wide;
    if (Tensor::create(*ctx->device, DType::F32, t.shape(), wide) &&
        ctx->device->fromBf16(t.cview<uint16_t>(), wide.view<float>()))
      ctx->device->allFinite(wide.cview<float>(), finite);
  }
  return finite;
}

template <class Fn>
whale_rt_status traced(whale_rt_context *ctx, const char *name,
                       whale_rt_tensor *const *outputs, size_t count, Fn fn) {
  if (ctx && ctx->watchCapture) {
    const bool clear = captureClear(ctx);
    whale_rt_status status = guarded(ctx, fn);
    if (clear)
      noteCaptureOp(ctx, name);
    return status;
  }
  if (!ctx || !ctx->profiler || ctx->profiler->paused())
    return guarded(ctx, fn);
  whale_rt_status status;
  {
    whale::rt::Profiler::Scope scope(ctx->profiler.get(), name, "compute",
                                     ctx->traceTrack, ctx->site);
    status = guarded(ctx, fn);
  }
  // The check is an event of its own ("check"), so a trace charges its pass
  // over the outputs to no op. `whale profile` turns it off: its trace must
  // run as an untraced step does.
  if (status == WHALE_RT_OK && ctx->firstNonFinite.empty() &&
      ctx->profiler->checksFinite()) {
    whale::rt::Profiler::Scope check(ctx->profiler.get(), "finite check",
                                     "check", ctx->traceTrack, ctx->site);
    for (size_t i = 0; i < count; ++i) {
      whale_rt_tensor *t = outputs[i];
      if (t && !outputFinite(ctx, t->tensor)) {
        ctx->firstNonFinite = name;
        break;
      }
    }
  }
  return status;
}
template <class Fn>
whale_rt_status traced(whale_rt_context *ctx, const char *name,
                       std::initializer_list<whale_rt_tensor *> outputs,
                       Fn fn) {
  return traced(ctx, name, outputs.begin(), outputs.size(), fn);
}

} // namespace whale::rt::capi

#endif
