//===- DnnlConv.cpp - the CPU's convolutions through oneDNN ---------------===//

#include "runtime/cpu/DnnlConv.h"

#include "runtime/core/ThreadPool.h"
#include "support/VectorLevel.h"

#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <tuple>

#if WHALE_HAVE_DNNL
#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace whale::rt {

#if WHALE_HAVE_DNNL

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

/// oneDNN held to the ISA WHALE_CPU_LEVEL allows (the tests of the AVX2
/// path run oneDNN's AVX2 kernels too); once, before any primitive.
void capIsa() {
  static std::once_flag once;
  std::call_once(once, [] {
    switch (kernelVectorLevel()) {
    case VectorLevel::Avx2:
      dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx2);
      break;
    case VectorLevel::Avx:
      dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx);
      break;
    case VectorLevel::Sse:
      dnnl::set_max_cpu_isa(dnnl::cpu_isa::sse41);
      break;
    default:
      break;
    }
  });
}

/// A convolution's shape: everything its primitives depend on (N is a
/// chunk's samples).
using ConvKey =
    std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
               int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;

/// The primitives of one shape, made once. Each call brings its own
/// scratchpad, so the chunks of one call run one primitive side by side.
struct ConvPrimitives {
  dnnl::convolution_forward::primitive_desc fwdPd;
  dnnl::convolution_forward fwd;
  // Made on the first backward.
  bool haveBackward = false;
  dnnl::convolution_backward_data::primitive_desc bwdDataPd;
  dnnl::convolution_backward_data bwdData;
  dnnl::convolution_backward_weights::primitive_desc bwdWeightsPd;
  dnnl::convolution_backward_weights bwdWeights;
  memory::desc userSrc, userWeights, userDst;
  memory::dims strides, dilates, padL, padR;
};

/// The pieces of a batch the device's threads take, one each: contiguous
/// runs of samples, as even as the batch allows.
struct Chunks {
  int64_t count, base, extra; ///< `extra` chunks have base + 1 samples
  Chunks(int64_t n, int threads)
      : count(std::max<int64_t>(1, std::min<int64_t>(n, threads))),
        base(n / count), extra(n % count) {}
  int64_t begin(int64_t i) const { return i * base + std::min(i, extra); }
  int64_t size(int64_t i) const { return base + (i < extra ? 1 : 0); }
};

} // namespace

struct DnnlConv::Impl {
  ThreadPool *pool = nullptr;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::map<ConvKey, std::unique_ptr<ConvPrimitives>> cache;

  /// What a buffer in oneDNN's layout holds for a call, by chunk.
  enum Role {
    Src,
    Dst,
    Weights,
    DiffDst,
    DiffSrc,
    WeightsSrc,
    WeightsDiffDst,
    DiffWeights,
    DataWeights,
    Scratch,
    DataScratch,
    WeightsScratch,
    OutDst,
    OutDiffSrc,
    OutDiffWeights,
    // The weight gradient cut by output channels (weightsByChannels).
    ChannelSrc,
    ChannelDiffDst,
    ChannelDiffWeights,
    ChannelScratch,
    ChannelOut
  };
  /// A buffer kept from call to call (fresh memory each call cost its page
  /// faults), and the reorder that fills it or empties it, made once.
  struct Slot {
    memory buf;
    dnnl::reorder reorder;
    bool haveReorder = false;
    memory::desc user; ///< the user side `reorder` was made for
    /// A reorder cut along the first dimension, a part a device thread.
    struct Part {
      memory::desc from, to;
      dnnl::reorder reorder;
    };
    std::vector<Part> parts;
  };
  std::map<std::tuple<const ConvPrimitives *, int64_t, int>, Slot> slots;
  std::mutex slotsLock;
  Slot &slot(const ConvPrimitives &p, int64_t chunk, Role role) {
    std::lock_guard<std::mutex> guard(slotsLock);
    return slots[{&p, chunk, role}];
  }
  /// The chunk's buffer of layout `d` for `role`, made on first use.
  memory &buffer(const ConvPrimitives &p, int64_t chunk, Role role,
                 const memory::desc &d) {
    Slot &s = slot(p, chunk, role);
    if (!s.buf || s.buf.get_desc() != d)
      s.buf = memory(d, engine);
    return s.buf;
  }
  /// `user` in layout `want`: itself where they agree, else reordered into
  /// the chunk's buffer for `role`.
  memory toLayout(const ConvPrimitives &p, int64_t chunk, Role role,
                  memory user, const memory::desc &want, dnnl::stream &s) {
    if (user.get_desc() == want)
      return user;
    Slot &slotted = slot(p, chunk, role);
    if (!slotted.buf || slotted.buf.get_desc() != want) {
      slotted.buf = memory(want, engine);
      slotted.haveReorder = false;
    }
    if (!slotted.haveReorder || slotted.user != user.get_desc()) {
      slotted.reorder = dnnl::reorder(user, slotted.buf);
      slotted.haveReorder = true;
      slotted.user = user.get_desc();
    }
    slotted.reorder.execute(s, user, slotted.buf);
    return slotted.buf;
  }
  /// `from` into `to` on the device's threads: cut along the first
  /// dimension (the weights' output channels) at multiples of the blocks'
  /// 16, each part reordered by one thread (the weights' reorders ran on
  /// the driving thread alone: a fifth of a ResNet-50 step's oneDNN time).
  void reorderOnPool(Slot &slot, memory from, memory to);
  /// `user` (plain weights) in layout `want`, reordered on the device's
  /// threads into the call's buffer for `role`.
  memory weightsToLayout(const ConvPrimitives &p, Role role, memory user,
                         const memory::desc &want) {
    if (user.get_desc() == want)
      return user;
    Slot &slotted = slot(p, -1, role);
    if (!slotted.buf || slotted.buf.get_desc() != want) {
      slotted.buf = memory(want, engine);
      slotted.parts.clear();
    }
    reorderOnPool(slotted, user, slotted.buf);
    return slotted.buf;
  }
  /// `computed` (in oneDNN's layout) into the user's plain tensor.
  void toUser(const ConvPrimitives &p, int64_t chunk, Role role,
              memory computed, memory user, dnnl::stream &s) {
    Slot &slotted = slot(p, chunk, role);
    if (!slotted.haveReorder || slotted.user != user.get_desc() ||
        slotted.buf.get_desc() != computed.get_desc()) {
      slotted.reorder = dnnl::reorder(computed, user);
      slotted.haveReorder = true;
      slotted.user = user.get_desc();
      slotted.buf = computed; // only its layout is compared
    }
    slotted.reorder.execute(s, computed, user);
  }

  ConvPrimitives &primitives(int64_t n, const View<const float> &x,
                             const View<const float> &w, const Window2d &win,
                             int64_t groups, const Shape &y);
  void makeBackward(ConvPrimitives &p);
  /// The weight gradient cut by output channels at multiples of 16, a
  /// part a device thread, each over the whole batch: no partial gradients
  /// to add and each part reordered into its own rows of dw.
  Status weightsByChannels(View<const float> x, View<const float> w,
                           View<const float> dy, const Window2d &win,
                           View<float> &dw);
  /// Runs fn(chunk, begin, samples) on the device's threads, one chunk a
  /// thread, each with oneDNN held to that one thread (no OpenMP team: the
  /// device's own threads do the work, under its pinning and its share).
  Status eachChunk(const Chunks &chunks,
                   const std::function<void(int64_t, int64_t, int64_t)> &fn);
};

ConvPrimitives &DnnlConv::Impl::primitives(int64_t n,
                                           const View<const float> &x,
                                           const View<const float> &w,
                                           const Window2d &win, int64_t groups,
                                           const Shape &y) {
  ConvKey key{n,        x.shape[1], x.shape[2],    x.shape[3],   w.shape[0],
              groups,   w.shape[2], w.shape[3],    win.strideH,  win.strideW,
              win.padH, win.padW,   win.dilationH, win.dilationW};
  std::unique_ptr<ConvPrimitives> &slot = cache[key];
  if (slot)
    return *slot;
  const memory::dims src = {n, x.shape[1], x.shape[2], x.shape[3]};
  const memory::dims dst = {n, y[1], y[2], y[3]};
  memory::dims weights = {w.shape[0], w.shape[1], w.shape[2], w.shape[3]};
  Tag weightsTag = Tag::oihw;
  if (groups > 1) {
    weights = {groups, w.shape[0] / groups, w.shape[1], w.shape[2], w.shape[3]};
    weightsTag = Tag::goihw;
  }
  auto p = std::make_unique<ConvPrimitives>();
  p->strides = {win.strideH, win.strideW};
  p->dilates = {win.dilationH - 1, win.dilationW - 1};
  p->padL = {win.padH, win.padW};
  // The far side's padding makes the output the size the shape rule gave.
  p->padR = {(y[2] - 1) * win.strideH + win.dilationH * (w.shape[2] - 1) + 1 -
                 x.shape[2] - win.padH,
             (y[3] - 1) * win.strideW + win.dilationW * (w.shape[3] - 1) + 1 -
                 x.shape[3] - win.padW};
  p->userSrc = memory::desc(src, memory::data_type::f32, Tag::nchw);
  p->userDst = memory::desc(dst, memory::data_type::f32, Tag::nchw);
  p->userWeights = memory::desc(weights, memory::data_type::f32, weightsTag);
  auto any = [](const memory::dims &d) {
    return memory::desc(d, memory::data_type::f32, Tag::any);
  };
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
      any(src), any(weights), any(dst), p->strides, p->dilates, p->padL,
      p->padR);
  p->fwdPd = dnnl::convolution_forward::primitive_desc(desc, attr, engine);
  p->fwd = dnnl::convolution_forward(p->fwdPd);
  slot = std::move(p);
  return *slot;
}

void DnnlConv::Impl::makeBackward(ConvPrimitives &p) {
  if (p.haveBackward)
    return;
  auto any = [](const memory::desc &d) {
    return memory::desc(d.dims(), memory::data_type::f32, Tag::any);
  };
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::convolution_backward_data::desc data(
      dnnl::algorithm::convolution_direct, any(p.userSrc), any(p.userWeights),
      any(p.userDst), p.strides, p.dilates, p.padL, p.padR);
  p.bwdDataPd = dnnl::convolution_backward_data::primitive_desc(
      data, attr, engine, p.fwdPd);
  p.bwdData = dnnl::convolution_backward_data(p.bwdDataPd);
  dnnl::convolution_backward_weights::desc wd(
      dnnl::algorithm::convolution_direct, any(p.userSrc), any(p.userWeights),
      any(p.userDst), p.strides, p.dilates, p.padL, p.padR);
  p.bwdWeightsPd = dnnl::convolution_backward_weights::primitive_desc(
      wd, attr, engine, p.fwdPd);
  p.bwdWeights = dnnl::convolution_backward_weights(p.bwdWeightsPd);
  p.haveBackward = true;
}

void DnnlConv::Impl::reorderOnPool(Slot &slot, memory from, memory to) {
  if (slot.parts.empty()) {
    const memory::desc fromDesc = from.get_desc(), toDesc = to.get_desc();
    const memory::dims dims = fromDesc.dims();
    const int64_t blocks = dims[0] / 16;
    const int64_t count =
        std::max<int64_t>(1, std::min<int64_t>(pool->size(), blocks));
    for (int64_t k = 0; k < count; ++k) {
      const int64_t begin = count == 1 ? 0 : 16 * (blocks * k / count);
      const int64_t end = count == 1 || k == count - 1
                              ? dims[0]
                              : 16 * (blocks * (k + 1) / count);
      memory::dims part = dims, offsets(dims.size(), 0);
      part[0] = end - begin;
      offsets[0] = begin;
      Slot::Part piece;
      piece.from =
          count == 1 ? fromDesc : fromDesc.submemory_desc(part, offsets);
      piece.to = count == 1 ? toDesc : toDesc.submemory_desc(part, offsets);
      piece.reorder = dnnl::reorder(
          dnnl::reorder::primitive_desc(engine, piece.from, engine, piece.to));
      slot.parts.push_back(std::move(piece));
    }
  }
  void *fromData = from.get_data_handle(), *toData = to.get_data_handle();
  pool->parallelFor(int64_t(slot.parts.size()), 1, [&](int64_t b, int64_t e) {
    omp_set_num_threads(1);
    for (int64_t k = b; k < e; ++k) {
      Slot::Part &piece = slot.parts[k];
      dnnl::stream s(engine);
      memory f(piece.from, engine, fromData), t(piece.to, engine, toData);
      piece.reorder.execute(s, f, t);
      s.wait();
    }
  });
}

Status DnnlConv::Impl::weightsByChannels(View<const float> x,
                                         View<const float> w,
                                         View<const float> dy,
                                         const Window2d &win, View<float> &dw) {
  const int64_t o = w.shape[0], blocks = o / 16;
  const int64_t count =
      std::max<int64_t>(1, std::min<int64_t>(pool->size(), blocks));
  const int64_t perOut = w.shape[1] * w.shape[2] * w.shape[3];
  auto bound = [&](int64_t k) {
    return k == count ? o : 16 * (blocks * k / count);
  };
  // Every part's primitives made here, on the driving thread.
  std::vector<ConvPrimitives *> ps(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) {
    const int64_t oc = bound(k + 1) - bound(k);
    View<const float> part{w.data + bound(k) * perOut,
                           {oc, w.shape[1], w.shape[2], w.shape[3]}};
    ps[k] = &primitives(x.shape[0], x, part, win, 1,
                        {dy.shape[0], oc, dy.shape[2], dy.shape[3]});
    makeBackward(*ps[k]);
  }
  const memory::desc wholeDy(
      {dy.shape[0], dy.shape[1], dy.shape[2], dy.shape[3]},
      memory::data_type::f32, Tag::nchw);
  return eachChunk(
      Chunks(count, static_cast<int>(count)), [&](int64_t k, int64_t, int64_t) {
        ConvPrimitives &p = *ps[k];
        dnnl::stream s(engine);
        memory userSrc(p.userSrc, engine, const_cast<float *>(x.data));
        memory src =
            toLayout(p, k, ChannelSrc, userSrc, p.bwdWeightsPd.src_desc(), s);
        // This part's channels of dy, read in place.
        const memory::dims dims = p.userDst.dims();
        memory userDy(wholeDy.submemory_desc(dims, {0, bound(k), 0, 0}), engine,
                      const_cast<float *>(dy.data));
        memory diffDst = toLayout(p, k, ChannelDiffDst, userDy,
                                  p.bwdWeightsPd.diff_dst_desc(), s);
        memory userDw(p.userWeights, engine, dw.data + bound(k) * perOut);
        const bool direct = p.bwdWeightsPd.diff_weights_desc() == p.userWeights;
        memory diffW = direct ? userDw
                              : buffer(p, k, ChannelDiffWeights,
                                       p.bwdWeightsPd.diff_weights_desc());
        p.bwdWeights.execute(s, {{DNNL_ARG_SRC, src},
                                 {DNNL_ARG_DIFF_DST, diffDst},
                                 {DNNL_ARG_DIFF_WEIGHTS, diffW},
                                 {DNNL_ARG_SCRATCHPAD,
                                  buffer(p, k, ChannelScratch,
                                         p.bwdWeightsPd.scratchpad_desc())}});
        if (!direct)
          toUser(p, k, ChannelOut, diffW, userDw, s);
        s.wait();
      });
}

Status DnnlConv::Impl::eachChunk(
    const Chunks &chunks,
    const std::function<void(int64_t, int64_t, int64_t)> &fn) {
  std::mutex lock;
  std::string failure;
  pool->parallelFor(chunks.count, 1, [&](int64_t b, int64_t e) {
    omp_set_num_threads(1);
    for (int64_t i = b; i < e; ++i) {
      try {
        fn(i, chunks.begin(i), chunks.size(i));
      } catch (const dnnl::error &err) {
        std::lock_guard<std::mutex> guard(lock);
        failure = err.what();
      }
    }
  });
  return failure.empty() ? Status::ok()
                         : Status::internal("oneDNN: " + failure);
}

DnnlConv::DnnlConv(ThreadPool &pool) : impl(std::make_unique<Impl>()) {
  capIsa();
  impl->pool = &pool;
}

DnnlConv::~DnnlConv() = default;

bool DnnlConv::enabled() {
  const char *path = std::getenv("WHALE_CPU_CONV");
  return !(path && std::string(path) == "im2col");
}

std::string DnnlConv::describe() {
  if (!enabled())
    return "im2col and GEMM (WHALE_CPU_CONV=im2col)";
  capIsa();
  const dnnl::version_t *v = dnnl::version();
  std::string isa;
  switch (dnnl::get_effective_cpu_isa()) {
  case dnnl::cpu_isa::avx2:
    isa = "avx2";
    break;
  case dnnl::cpu_isa::avx512_core:
  case dnnl::cpu_isa::avx512_core_vnni:
  case dnnl::cpu_isa::avx512_core_bf16:
  case dnnl::cpu_isa::avx512_core_amx:
    isa = "avx512";
    break;
  default:
    isa = "below avx2";
  }
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) +
         "." + std::to_string(v->patch) + " (" + isa + ")";
}

/// oneDNN's exceptions as a Status naming the call.
template <class F> static Status guarded(const char *what, F &&f) {
  try {
    return f();
  } catch (const dnnl::error &e) {
    return Status::internal(std::string("oneDNN ") + what + ": " + e.what());
  }
}

/// Samples [b, b + n) of an NCHW tensor whose sample is `sample` floats.
template <class T> static T *samples(T *data, int64_t b, int64_t sample) {
  return data + b * sample;
}

Status DnnlConv::forward(View<const float> x, View<const float> w,
                         const Window2d &win, int64_t groups, View<float> y) {
  return guarded("convolution", [&]() -> Status {
    const Chunks chunks(x.shape[0], impl->pool->size());
    // Every chunk's primitive made here, on the driving thread; the
    // weights in its layout once, shared by the chunks.
    std::vector<ConvPrimitives *> ps(static_cast<size_t>(chunks.count));
    for (int64_t i = 0; i < chunks.count; ++i)
      ps[i] = &impl->primitives(chunks.size(i), x, w, win, groups, y.shape);
    memory weights = impl->weightsToLayout(
        *ps[0], Impl::Weights,
        memory(ps[0]->userWeights, impl->engine, const_cast<float *>(w.data)),
        ps[0]->fwdPd.weights_desc());
    const int64_t inSample = x.shape[1] * x.shape[2] * x.shape[3];
    const int64_t outSample = y.shape[1] * y.shape[2] * y.shape[3];
    return impl->eachChunk(chunks, [&](int64_t i, int64_t b, int64_t) {
      ConvPrimitives &p = *ps[i];
      dnnl::stream s(impl->engine);
      memory userSrc(p.userSrc, impl->engine,
                     const_cast<float *>(samples(x.data, b, inSample)));
      memory userDst(p.userDst, impl->engine, samples(y.data, b, outSample));
      memory src =
          impl->toLayout(p, i, Impl::Src, userSrc, p.fwdPd.src_desc(), s);
      const bool direct = p.fwdPd.dst_desc() == p.userDst;
      memory dst =
          direct ? userDst : impl->buffer(p, i, Impl::Dst, p.fwdPd.dst_desc());
      p.fwd.execute(
          s, {{DNNL_ARG_SRC, src},
              {DNNL_ARG_WEIGHTS, weights},
              {DNNL_ARG_DST, dst},
              {DNNL_ARG_SCRATCHPAD,
               impl->buffer(p, i, Impl::Scratch, p.fwdPd.scratchpad_desc())}});
      if (!direct)
        impl->toUser(p, i, Impl::OutDst, dst, userDst, s);
      s.wait();
    });
  });
}

Status DnnlConv::backward(View<const float> x, View<const float> w,
                          View<const float> dy, const Window2d &win,
                          int64_t groups, View<float> *dx, View<float> *dw) {
  return guarded("convolution gradient", [&]() -> Status {
    if (!dx && !dw)
      return Status::ok();
    // Where the weights outweigh the batch's input (ResNet's last stages
    // at small images), their gradient is cut by output channels: cut by
    // samples, each thread's partial gradient of all the weights was added
    // and reordered after, three more passes over them than the compute.
    if (dw && groups == 1 && impl->pool->size() > 1 && w.shape[0] >= 32 &&
        w.numel() >= x.numel()) {
      if (dx)
        if (Status st = backward(x, w, dy, win, groups, dx, nullptr); !st)
          return st;
      return impl->weightsByChannels(x, w, dy, win, *dw);
    }
    const Chunks chunks(x.shape[0], impl->pool->size());
    std::vector<ConvPrimitives *> ps(static_cast<size_t>(chunks.count));
    for (int64_t i = 0; i < chunks.count; ++i) {
      ps[i] = &impl->primitives(chunks.size(i), x, w, win, groups, dy.shape);
      impl->makeBackward(*ps[i]);
    }
    ConvPrimitives &first = *ps[0];
    memory weights;
    if (dx)
      weights = impl->weightsToLayout(
          first, Impl::DataWeights,
          memory(first.userWeights, impl->engine, const_cast<float *>(w.data)),
          first.bwdDataPd.weights_desc());
    const int64_t inSample = x.shape[1] * x.shape[2] * x.shape[3];
    const int64_t outSample = dy.shape[1] * dy.shape[2] * dy.shape[3];
    // Each chunk's weight gradient in the primitive's layout (every chunk's
    // primitive shares it: their shapes differ only in N), added in chunk
    // order after: the same sum whichever thread ran which chunk.
    std::vector<memory> partial(static_cast<size_t>(dw ? chunks.count : 0));
    for (int64_t i = 0; i < int64_t(partial.size()); ++i)
      partial[i] = impl->buffer(first, i, Impl::DiffWeights,
                                first.bwdWeightsPd.diff_weights_desc());
    if (Status st = impl->eachChunk(
            chunks,
            [&](int64_t i, int64_t b, int64_t) {
              ConvPrimitives &p = *ps[i];
              dnnl::stream s(impl->engine);
              memory userDy(
                  p.userDst, impl->engine,
                  const_cast<float *>(samples(dy.data, b, outSample)));
              memory dataDiffDst;
              if (dx) {
                memory userDx(p.userSrc, impl->engine,
                              samples(dx->data, b, inSample));
                dataDiffDst = impl->toLayout(p, i, Impl::DiffDst, userDy,
                                             p.bwdDataPd.diff_dst_desc(), s);
                const bool direct = p.bwdDataPd.diff_src_desc() == p.userSrc;
                memory diffSrc =
                    direct ? userDx
                           : impl->buffer(p, i, Impl::DiffSrc,
                                          p.bwdDataPd.diff_src_desc());
                p.bwdData.execute(
                    s, {{DNNL_ARG_DIFF_DST, dataDiffDst},
                        {DNNL_ARG_WEIGHTS, weights},
                        {DNNL_ARG_DIFF_SRC, diffSrc},
                        {DNNL_ARG_SCRATCHPAD,
                         impl->buffer(p, i, Impl::DataScratch,
                                      p.bwdDataPd.scratchpad_desc())}});
                if (!direct)
                  impl->toUser(p, i, Impl::OutDiffSrc, diffSrc, userDx, s);
              }
              if (dw) {
                memory userSrc(
                    p.userSrc, impl->engine,
                    const_cast<float *>(samples(x.data, b, inSample)));
                memory src = impl->toLayout(p, i, Impl::WeightsSrc, userSrc,
                                            p.bwdWeightsPd.src_desc(), s);
                // dy once in oneDNN's layout where both gradients read it so.
                memory diffDst =
                    dx && p.bwdWeightsPd.diff_dst_desc() ==
                                dataDiffDst.get_desc()
                        ? dataDiffDst
                        : impl->toLayout(p, i, Impl::WeightsDiffDst, userDy,
                                         p.bwdWeightsPd.diff_dst_desc(), s);
                p.bwdWeights.execute(
                    s, {{DNNL_ARG_SRC, src},
                        {DNNL_ARG_DIFF_DST, diffDst},
                        {DNNL_ARG_DIFF_WEIGHTS, partial[i]},
                        {DNNL_ARG_SCRATCHPAD,
                         impl->buffer(p, i, Impl::WeightsScratch,
                                      p.bwdWeightsPd.scratchpad_desc())}});
              }
              s.wait();
            });
        !st)
      return st;
    if (dw) {
      float *sum = static_cast<float *>(partial[0].get_data_handle());
      const int64_t n = static_cast<int64_t>(partial[0].get_desc().get_size() /
                                             sizeof(float));
      for (size_t i = 1; i < partial.size(); ++i) {
        const float *add =
            static_cast<const float *>(partial[i].get_data_handle());
        impl->pool->parallelFor(n, 4096, [&](int64_t b, int64_t e) {
          for (int64_t k = b; k < e; ++k)
            sum[k] += add[k];
        });
      }
      memory userDw(first.userWeights, impl->engine, dw->data);
      if (partial[0].get_desc() == first.userWeights)
        std::copy(sum, sum + n, dw->data);
      else
        impl->reorderOnPool(impl->slot(first, -1, Impl::OutDiffWeights),
                            partial[0], userDw);
    }
    return Status::ok();
  });
}

#else // !WHALE_HAVE_DNNL

struct DnnlConv::Impl {};
DnnlConv::DnnlConv(ThreadPool &) {}
DnnlConv::~DnnlConv() = default;
bool DnnlConv::enabled() { return false; }
std::string DnnlConv::describe() {
  return "im2col and GEMM (built without oneDNN)";
}
Status DnnlConv::forward(View<const float>, View<const float>, const Window2d &,
                         int64_t, View<float>) {
  return Status::internal("built without oneDNN");
}
Status DnnlConv::backward(View<const float>, View<const float>,
                          View<const float>, const Window2d &, int64_t,
                          View<float> *, View<float> *) {
  return Status::internal("built without oneDNN");
}

#endif

} // namespace whale::rt
