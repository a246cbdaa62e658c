//===- CApi.cpp - the runtime's C ABI over the C++ runtime ----------------===//

#include "runtime/capi/CApiInternal.h"
#include "runtime/core/DevicePlugin.h"
#include "runtime/cpu/BlasKernels.h"
#include "runtime/cpu/DnnlConv.h"
#include "runtime/data/DataOrder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>

using namespace whale::rt;
using namespace whale::rt::capi;

namespace {

/// A name's key in the seed's stream (FNV-1a), so each parameter has its
/// own numbers whatever order parameters are made in.
uint64_t nameKey(uint64_t seed, const char *name) {
  uint64_t h = 1469598103934665603ull;
  for (const char *p = name; *p; ++p)
    h = (h ^ static_cast<unsigned char>(*p)) * 1099511628211ull;
  return mix64(seed) ^ mix64(h);
}

double uniform01(uint64_t key, uint64_t n) {
  return static_cast<double>(streamValue(key, n) >> 11) * 0x1.0p-53;
}

} // namespace

namespace whale::rt::capi {

static whale_rt_status checkInit(whale_rt_context *ctx, const char *name,
                                 int32_t init_kind, int32_t num_args) {
  static const int32_t argsOf[] = {0, 0, 2, 2, 1};
  if (init_kind < 0 || init_kind > WHALE_RT_INIT_XAVIER ||
      num_args != argsOf[init_kind])
    return ctx->invalid("param '" + std::string(name) + "': initializer " +
                        std::to_string(init_kind) + " with " +
                        std::to_string(num_args) + " numbers");
  return WHALE_RT_OK;
}

void initParameter(float *data, const Shape &s, int32_t init_kind,
                   const double *init_args, uint64_t key) {
  int64_t n = numElements(s);
  switch (init_kind) {
  case WHALE_RT_INIT_ZEROS:
  case WHALE_RT_INIT_ONES:
    std::fill(data, data + n, init_kind == WHALE_RT_INIT_ONES ? 1.0f : 0.0f);
    break;
  case WHALE_RT_INIT_NORMAL:
    // Box-Muller from two uniforms per element.
    for (int64_t i = 0; i < n; ++i) {
      double u1 = uniform01(key, 2 * i), u2 = uniform01(key, 2 * i + 1);
      double z = std::sqrt(-2 * std::log(1 - u1)) * std::cos(2 * M_PI * u2);
      data[i] = static_cast<float>(init_args[0] + init_args[1] * z);
    }
    break;
  case WHALE_RT_INIT_UNIFORM:
  case WHALE_RT_INIT_XAVIER: {
    double lo, hi;
    if (init_kind == WHALE_RT_INIT_UNIFORM) {
      lo = init_args[0];
      hi = init_args[1];
    } else {
      // Glorot: U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out)), with
      // fan_out the last extent and fan_in the rest (a [in, out] weight).
      double fanOut = s.empty() ? 1 : static_cast<double>(s.back());
      double fanIn = fanOut > 0 ? static_cast<double>(n) / fanOut : 1;
      double a = init_args[0] * std::sqrt(6.0 / std::max(1.0, fanIn + fanOut));
      lo = -a;
      hi = a;
    }
    for (int64_t i = 0; i < n; ++i)
      data[i] = static_cast<float>(lo + (hi - lo) * uniform01(key, i));
    break;
  }
  }
}

whale_rt_status
makeParameter(whale_rt_context *ctx, const char *name, const Shape &shape,
              int32_t init_kind, int32_t num_args,
              const std::function<void(float *data, uint64_t key)> &fill,
              whale_rt_tensor **out) {
  if (auto it = ctx->params.find(name); it != ctx->params.end()) {
    if (it->second->tensor.shape() != shape)
      return ctx->invalid("param '" + std::string(name) + "' exists as " +
                          shapeString(it->second->tensor.shape()) +
                          ", asked for as " + shapeString(shape));
    *out = it->second.get();
    return WHALE_RT_OK;
  }
  if (whale_rt_status st = checkInit(ctx, name, init_kind, num_args))
    return st;
  auto t = std::make_unique<whale_rt_tensor>();
  if (Status st = Tensor::create(*ctx->device, DType::F32, shape, t->tensor);
      !st)
    return ctx->fail(st);
  t->host = ctx->device->hostAddressable();
  // Initialized on the host, from the same numbers on every device.
  HostData host(ctx, t.get(), /*writeBack=*/true);
  host.prepare();
  fill(host.as<float>(), nameKey(ctx->seed, name));
  if (Status st = host.commit(); !st)
    return ctx->fail(st);
  *out = t.get();
  ctx->params[name] = std::move(t);
  return WHALE_RT_OK;
}

} // namespace whale::rt::capi

namespace {} // namespace

extern "C" {

whale_rt_context *whale_rt_context_create(const char *device_name,
                                          int32_t threads, int64_t memory_limit,
                                          uint64_t seed) {
  whale_rt_context *ctx = nullptr;
  whale_rt_context_open(device_name, threads, memory_limit, seed, &ctx, nullptr,
                        0);
  return ctx;
}

static void writeError(char *error, int64_t size, const std::string &what) {
  if (error && size > 0)
    std::snprintf(error, static_cast<size_t>(size), "%s", what.c_str());
}

whale_rt_status whale_rt_context_open(const char *device_name, int32_t threads,
                                      int64_t memory_limit, uint64_t seed,
                                      whale_rt_context **out, char *error,
                                      int64_t error_size) {
  if (!out)
    return WHALE_RT_INVALID_ARGUMENT;
  *out = nullptr;
  try {
    auto ctx = std::make_unique<whale_rt_context>();
    Status st = openDevice(device_name ? device_name : "cpu:0", threads,
                           memory_limit, ctx->device);
    if (!st) {
      writeError(error, error_size, st.message());
      return st.code() == Status::Code::OutOfMemory ? WHALE_RT_OUT_OF_MEMORY
                                                    : WHALE_RT_INVALID_ARGUMENT;
    }
    ctx->seed = seed;
    *out = ctx.release();
    return WHALE_RT_OK;
  } catch (const std::bad_alloc &) {
    writeError(error, error_size, "out of host memory");
    return WHALE_RT_OUT_OF_MEMORY;
  }
}

whale_rt_status whale_rt_device_check(const char *device_name, char *error,
                                      int64_t error_size) {
  Status st = checkDevice(device_name ? device_name : "");
  if (st)
    return WHALE_RT_OK;
  writeError(error, error_size, st.message());
  return WHALE_RT_INVALID_ARGUMENT;
}

void whale_rt_context_destroy(whale_rt_context *ctx) { delete ctx; }

const char *whale_rt_blas_kernels(void) {
  static const std::string said = [] {
    const cpu::BlasKernels &k = cpu::blasKernels();
    return k.running + " kernels" + (k.note.empty() ? "" : " (" + k.note + ")");
  }();
  return said.c_str();
}

const char *whale_rt_conv_kernels(void) {
  static const std::string said = DnnlConv::describe();
  return said.c_str();
}

const char *whale_rt_last_error(const whale_rt_context *ctx) {
  return ctx ? ctx->lastError.c_str() : "no context";
}

whale_rt_status whale_rt_set_amp(whale_rt_context *ctx, int32_t mode) {
  return guarded(ctx, [&]() -> whale_rt_status {
    if (mode != WHALE_RT_AMP_OFF && mode != WHALE_RT_AMP_BF16)
      return ctx->invalid("set_amp: unknown mode " + std::to_string(mode));
    ctx->device->setMatmulPrecision(mode == WHALE_RT_AMP_BF16
                                        ? MatmulPrecision::BF16
                                        : MatmulPrecision::F32);
    return WHALE_RT_OK;
  });
}

whale_rt_status whale_rt_context_pin_workers(whale_rt_context *ctx,
                                             const int32_t *cpus,
                                             int32_t count) {
  return guarded(ctx, [&]() -> whale_rt_status {
    if (count < 0 || (count > 0 && !cpus))
      return ctx->invalid("context_pin_workers: " + std::to_string(count) +
                          " CPUs and no list");
    std::vector<int> list(cpus, cpus + count);
    if (!ctx->device->pinWorkers(list))
      return ctx->invalid("context_pin_workers: the system did not bind the "
                          "workers to the " +
                          std::to_string(count) + " CPUs given");
    return WHALE_RT_OK;
  });
}

whale_rt_status whale_rt_context_enter(whale_rt_context *ctx) {
  return guarded(ctx, [&]() -> whale_rt_status {
    return ran(ctx, ctx->device->enterFromThisThread());
  });
}

whale_rt_status whale_rt_context_cpu_share(whale_rt_context *ctx, double *share,
                                           char *group, int64_t group_size) {
  return guarded(ctx, [&]() -> whale_rt_status {
    if (!share)
      return ctx->invalid("context_cpu_share: 'share' is null");
    std::string dir;
    *share = ctx->device->enforcedShare(dir);
    if (group && group_size > 0)
      std::snprintf(group, static_cast<size_t>(group_size), "%s", dir.c_str());
    if (*share <= 0)
      return ran(
          ctx, Status::internal("cannot read the quota of the cgroup " + dir));
    return WHALE_RT_OK;
  });
}

whale_rt_status whale_rt_enable_trace(whale_rt_context *ctx) {
  return guarded(ctx, [&]() -> whale_rt_status {
    if (!ctx->profiler) {
      ctx->profiler = std::make_shared<Profiler>();
      ctx->profiler->nameTrack(0, ctx->device->name() + " compute");
    }
    return WHALE_RT_OK;
  });
}

void whale_rt_set_site(whale_rt_context *ctx, int64_t site) {
  if (ctx)
    ctx->site = site;
}

const char *whale_rt_first_nonfinite(const whale_rt_context *ctx) {
  return ctx ? ctx->firstNonFinite.c_str() : "";
}

whale_rt_status whale_rt_write_trace(whale_rt_context *ctx, const char *path) {
  return guarded(ctx, [&]() -> whale_rt_status {
    if (!ctx->profiler || !path)
      return ctx->invalid("write_trace: tracing is not enabled");
    Status st = ctx->profiler->writeChromeTrace(path);
    return st ? WHALE_RT_OK : ctx->fail(st);
  });
}

int64_t whale_rt_memory_in_use(const whale_rt_context *ctx) {
  return ctx ? ctx->device->allocator().inUse() : 0;
}

int64_t whale_rt_memory_peak(const whale_rt_context *ctx) {
  return ctx ? ctx->device->allocator().peak() : 0;
}

whale_rt_status whale_rt_tensor_create(whale_rt_context *ctx, int32_t dtype,
                                       int32_t rank, const int64_t *shape,
                                       whale_rt_tensor **out) {
  return guarded(ctx, [&]() -> whale_rt_status {
    DType d;
    if (!out || rank < 0 || (rank > 0 && !shape) || !dtypeFromAbi(dtype, d))
      return ctx->invalid("tensor_create: bad arguments (dtype " +
                          std::to_string(dtype) + ", rank " +
                          std::to_string(rank) + ")");
    auto t = std::make_unique<whale_rt_tensor>();
    Shape s(shape, shape + rank);
    if (Status st = Tensor::create(*ctx->device, d, s, t->tensor); !st)
      return ctx->fail(st);
    t->host = ctx->device->hostAddressable();
    *out = t.get();
    ctx->tensors[t.get()] = std::move(t);
    return WHALE_RT_OK;
  });
}

whale_rt_status whale_rt_tensor_wrap(whale_rt_context *ctx, int32_t dtype,
                                     int32_t rank, const int64_t *shape,
                                     void *data, whale_rt_tensor **out) {
  return guarded(ctx, [&]() -> whale_rt_status {
    DType d;
    if (!out || rank < 0 || (rank > 0 && !shape) || !dtypeFromAbi(dtype, d))
      return ctx->invalid("tensor_wrap: bad arguments (dtype " +
                          std::to_string(dtype) + ", rank " +
                          std::to_string(rank) + ")");
    if (!ctx->device->hostAddressable())
      return ctx->invalid("tensor_wrap: the device cannot address host "
                          "memory; copy with whale_rt_tensor_write");
    if (reinterpret_cast<uintptr_t>(data) % WHALE_RT_ALIGNMENT != 0)
      return ctx->invalid("tensor_wrap: the memory is not aligned to " +
                          std::to_string(WHALE_RT_ALIGNMENT) + " bytes");
    auto t = std::make_unique<whale_rt_tensor>();
    if (Status st =
            Tensor::borrow(d, Shape(shape, shape + rank), data, t->tensor);
        !st)
      return ctx->fail(st);
    *out = t.get();
    ctx->tensors[t.get()] = std::move(t);
    return WHALE_RT_OK;
  });
}

void whale_rt_tensor_release(whale_rt_context *ctx, whale_rt_tensor *t) {
  if (!ctx || !t)
    return;
  // Its optimizer state goes with it: a later tensor at the same address
  // must not inherit state of another shape.
  ctx->optimizerState.erase(t);
  ctx->tensors.erase(t); // parameters are not in this map: never freed here
}

void *whale_rt_tensor_data(whale_rt_tensor *t) {
  return t && t->host ? t->tensor.raw() : nullptr;
}

whale_rt_status whale_rt_tensor_read(whale_rt_context *ctx, whale_rt_tensor *t,
                                     void *dst, int64_t bytes) {
  return guarded(ctx, [&]() -> whale_rt_status {
    if (!t || !dst || bytes < 0 || bytes > t->tensor.bytes())
      return ctx->invalid("tensor_read: bad arguments");
    return ran(ctx, ctx->device->copyToHost(dst, t->tensor.raw(), bytes));
  });
}

whale_rt_status whale_rt_tensor_write(whale_rt_context *ctx, whale_rt_tensor *t,
                                      const void *src, int64_t bytes) {
  return guarded(ctx, [&]() -> whale_rt_status {
    if (!t || !src || bytes < 0 || bytes > t->tensor.bytes())
      return ctx->invalid("tensor_write: bad arguments");
    return ran(ctx, ctx->device->copyFromHost(t->tensor.raw(), src, bytes));
  });
}
int32_t whale_rt_tensor_rank(const whale_rt_tensor *t) {
  return t ? static_cast<int32_t>(t->tensor.shape().size()) : -1;
}
const int64_t *whale_rt_tensor_shape(const whale_rt_tensor *t) {
  return t ? t->tensor.shape().data() : nullptr;
}
int32_t whale_rt_tensor_dtype(const whale_rt_tensor *t) {
  if (!t)
    return -1;
  switch (t->tensor.dtype()) {
  case DType::F32:
    return WHALE_RT_F32;
  case DType::F64:
    return WHALE_RT_F64;
  case DType::I32:
    return WHALE_RT_I32;
  case DType::I64:
    return WHALE_RT_I64;
  case DType::BF16:
    return WHALE_RT_BF16;
  }
  return -1;
}

int64_t whale_rt_param_count(const whale_rt_context *ctx) {
  return ctx ? static_cast<int64_t>(ctx->params.size()) : 0;
}

const char *whale_rt_param_name(const whale_rt_context *ctx, int64_t index,
                                whale_rt_tensor **tensor) {
  if (!ctx || index < 0 || index >= static_cast<int64_t>(ctx->params.size()))
    return nullptr;
  auto it = std::next(ctx->params.begin(), index);
  if (tensor)
    *tensor = it->second.get();
  return it->first.c_str();
}

int32_t whale_rt_optimizer_state_count(const whale_rt_context *ctx,
                                       whale_rt_tensor *param) {
  if (!ctx || !param)
    return 0;
  auto it = ctx->optimizerState.find(param);
  return it == ctx->optimizerState.end()
             ? 0
             : static_cast<int32_t>(it->second.size());
}

whale_rt_status whale_rt_param(whale_rt_context *ctx, const char *name,
                               int32_t init_kind, const double *init_args,
                               int32_t num_args, int32_t rank,
                               const int64_t *shape, whale_rt_tensor **out) {
  return guarded(ctx, [&]() -> whale_rt_status {
    if (!name || !out || rank < 0 || (rank > 0 && !shape) || num_args < 0 ||
        (num_args > 0 && !init_args))
      return ctx->invalid("param: bad arguments");
    Shape s(shape, shape + rank);
    return makeParameter(
        ctx, name, s, init_kind, num_args,
        [&](float *data, uint64_t key) {
          initParameter(data, s, init_kind, init_args, key);
        },
        out);
  });
}

whale_rt_status whale_rt_fill(whale_rt_context *ctx, whale_rt_tensor *t,
                              double value) {
  return traced(ctx, "fill", {t}, [&]() -> whale_rt_status {
    if (!t)
      return ctx->invalid("fill: the tensor is null");
    return ran(ctx, ctx->device->fill(t->tensor.raw(), t->tensor.dtype(),
                                      t->tensor.numel(), value));
  });
}

whale_rt_status whale_rt_matmul(whale_rt_context *ctx, whale_rt_tensor *a,
                                whale_rt_tensor *b, whale_rt_tensor *out,
                                int32_t transpose_a, int32_t transpose_b) {
  return traced(ctx, "matmul", {out}, [&]() -> whale_rt_status {
    bool bf16;
    if (!out)
      return ctx->invalid("matmul: 'out' is null");
    if (whale_rt_status s = matmulTypes(ctx, "matmul", {{"a", a}, {"b", b}},
                                        {{"out", out}}, bf16))
      return s;
    const Shape &sa = shapeOf(a), &sb = shapeOf(b);
    if (sa.size() < 2 || sb.size() < 2)
      return ctx->invalid("matmul: operands need rank >= 2, got " +
                          shapeString(sa) + " and " + shapeString(sb));
    size_t ra = sa.size(), rb = sb.size();
    int64_t m = transpose_a ? sa[ra - 1] : sa[ra - 2];
    int64_t ka = transpose_a ? sa[ra - 2] : sa[ra - 1];
    int64_t kb = transpose_b ? sb[rb - 1] : sb[rb - 2];
    int64_t n = transpose_b ? sb[rb - 2] : sb[rb - 1];
    Shape batch(sa.begin(), sa.end() - 2);
    if (ka != kb || (rb > 2 && Shape(sb.begin(), sb.end() - 2) != batch))
      return ctx->invalid("matmul: " + shapeString(sa) + " and " +
                          shapeString(sb) + " do not fit");
    Shape want = batch;
    want.push_back(m);
    want.push_back(n);
    if (whale_rt_status s = needShape(ctx, "matmul", out, want))
      return s;
    if (bf16)
      return ran(ctx, ctx->device->matmulBf16(a->tensor.cview<uint16_t>(),
                                              b->tensor.cview<uint16_t>(),
                                              mixedOut(out), transpose_a,
                                              transpose_b));
    return ran(ctx, ctx->device->matmul(
                        a->tensor.cview<float>(), b->tensor.cview<float>(),
                        out->tensor.view<float>(), transpose_a, transpose_b));
  });
}

whale_rt_status whale_rt_binary(whale_rt_context *ctx, int32_t op,
                                whale_rt_tensor *a, whale_rt_tensor *b,
                                whale_rt_tensor *out) {
  return traced(ctx, "binary", {out}, [&]() -> whale_rt_status {
    if (whale_rt_status s =
            needF32(ctx, "binary", {{"a", a}, {"b", b}, {"out", out}}))
      return s;
    if (op < WHALE_RT_ADD || op > WHALE_RT_DIV)
      return ctx->invalid("binary: unknown op " + std::to_string(op));
    const Shape &sa = shapeOf(a), &sb = shapeOf(b);
    size_t rank = std::max(sa.size(), sb.size());
    Shape want(rank);
    for (size_t i = 0; i < rank; ++i) {
      int64_t x = i < sa.size() ? sa[sa.size() - 1 - i] : 1;
      int64_t y = i < sb.size() ? sb[sb.size() - 1 - i] : 1;
      if (x != y && x != 1 && y != 1)
        return ctx->invalid("binary: " + shapeString(sa) + " and " +
                            shapeString(sb) + " do not broadcast");
      want[rank - 1 - i] = x == 1 ? y : x;
    }
    if (whale_rt_status s = needShape(ctx, "binary", out, want))
      return s;
    return ran(ctx, ctx->device->binary(
                        static_cast<BinaryOp>(op), a->tensor.cview<float>(),
                        b->tensor.cview<float>(), out->tensor.view<float>()));
  });
}

whale_rt_status whale_rt_unary(whale_rt_context *ctx, int32_t op,
                               whale_rt_tensor *x, whale_rt_tensor *out) {
  return traced(ctx, "unary", {out}, [&]() -> whale_rt_status {
    if (whale_rt_status s = needF32(ctx, "unary", {{"x", x}, {"out", out}}))
      return s;
    if (op < WHALE_RT_NEG || op > WHALE_RT_SQRT)
      return ctx->invalid("unary: unknown op " + std::to_string(op));
    if (whale_rt_status s = needShape(ctx, "unary", out, shapeOf(x)))
      return s;
    return ran(ctx, ctx->device->unary(static_cast<UnaryOp>(op),
                                       x->tensor.cview<float>(),
                                       out->tensor.view<float>()));
  });
}

whale_rt_status whale_rt_cast(whale_rt_context *ctx, whale_rt_tensor *x,
                              whale_rt_tensor *out) {
  return traced(ctx, "cast", {out}, [&]() -> whale_rt_status {
    if (!x || !out)
      return ctx->invalid("cast: a tensor is null");
    DType from = x->tensor.dtype(), to = out->tensor.dtype();
    bool widen = from == DType::BF16 && to == DType::F32;
    bool narrow = from == DType::F32 && to == DType::BF16;
    if (!widen && !narrow)
      return ctx->invalid(std::string("cast: converts between f32 and bf16, "
                                      "not ") +
                          dtypeName(from) + " to " + dtypeName(to));
    if (whale_rt_status s = needShape(ctx, "cast", out, shapeOf(x)))
      return s;
    if (narrow)
      return ran(ctx, ctx->device->toBf16(x->tensor.cview<float>(),
                                          out->tensor.view<uint16_t>()));
    return ran(ctx, ctx->device->fromBf16(x->tensor.cview<uint16_t>(),
                                          out->tensor.view<float>()));
  });
}

whale_rt_status whale_rt_softmax(whale_rt_context *ctx, whale_rt_tensor *x,
                                 int64_t axis, whale_rt_tensor *out) {
  return traced(ctx, "softmax", {out}, [&]() -> whale_rt_status {
    if (whale_rt_status s = needF32(ctx, "softmax", {{"x", x}, {"out", out}}))
      return s;
    int64_t rank = static_cast<int64_t>(shapeOf(x).size());
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank)
      return ctx->invalid("softmax: axis " + std::to_string(axis) +
                          " is out of range for rank " + std::to_string(rank));
    if (whale_rt_status s = needShape(ctx, "softmax", out, shapeOf(x)))
      return s;
    return ran(ctx, ctx->device->softmax(x->tensor.cview<float>(), a,
                                         out->tensor.view<float>()));
  });
}

whale_rt_status whale_rt_causal_mask(whale_rt_context *ctx, whale_rt_tensor *x,
                                     whale_rt_tensor *out) {
  return traced(ctx, "causal_mask", {out}, [&]() -> whale_rt_status {
    if (whale_rt_status s =
            needF32(ctx, "causal_mask", {{"x", x}, {"out", out}}))
      return s;
    if (shapeOf(x).size() < 2)
      return ctx->invalid("causal_mask: needs rank >= 2");
    if (whale_rt_status s = needShape(ctx, "causal_mask", out, shapeOf(x)))
      return s;
    return ran(ctx, ctx->device->causalMask(x->tensor.cview<float>(),
                                            out->tensor.view<float>()));
  });
}

whale_rt_status whale_rt_layernorm(whale_rt_context *ctx, whale_rt_tensor *x,
                                   whale_rt_tensor *gamma,
                                   whale_rt_tensor *beta, double eps,
                                   whale_rt_tensor *out) {
  return traced(ctx, "layernorm", {out}, [&]() -> whale_rt_status {
    if (whale_rt_status s =
            needF32(ctx, "layernorm",
                    {{"x", x}, {"gamma", gamma}, {"beta", beta}, {"out", out}}))
      return s;
    const Shape &sx = shapeOf(x);
    if (sx.empty() || shapeOf(gamma) != Shape{sx.back()} ||
        shapeOf(beta) != Shape{sx.back()} || !(eps > 0))
      return ctx->invalid("layernorm: gamma and beta must be [" +
                          std::to_string(sx.empty() ? 0 : sx.back()) +
                          "] and eps positive");
    if (whale_rt_status s = needShape(ctx, "layernorm", out, sx))
      return s;
    return ran(ctx, ctx->device->layerNorm(x->tensor.cview<float>(),
                                           gamma->tensor.cview<float>(),
                                           beta->tensor.cview<float>(), eps,
                                           out->tensor.view<float>()));
  });
}

whale_rt_status whale_rt_rope(whale_rt_context *ctx, whale_rt_tensor *x,
                              whale_rt_tensor *position, double theta,
                              const double *scaling, int32_t inverse,
                              whale_rt_tensor *out) {
  return traced(ctx, "rope", {out}, [&]() -> whale_rt_status {
    if (whale_rt_status s = needF32(ctx, "rope", {{"x", x}, {"out", out}}))
      return s;
    const Shape &sx = shapeOf(x);
    if (sx.size() < 2 || sx.back() % 2 != 0 || !(theta > 1))
      return ctx->invalid("rope: needs x [..., T, E] with an even E and "
                          "theta above 1, got " +
                          shapeString(sx));
    if (whale_rt_status s = needShape(ctx, "rope", out, sx))
      return s;
    int64_t first = 0;
    if (position)
      if (whale_rt_status s = readPosition(ctx, "rope", position, first))
        return s;
    RopeScaling scaled;
    if (scaling) {
      scaled = RopeScaling{scaling[0], scaling[1], scaling[2], scaling[3]};
      if (!(scaled.factor >= 1) || !(scaled.lowFreqFactor > 0) ||
          !(scaled.highFreqFactor > scaled.lowFreqFactor) ||
          !(scaled.originalPositions >= 1))
        return ctx->invalid("rope: scaling needs factor >= 1, 0 < "
                            "low_freq_factor < high_freq_factor and "
                            "original positions >= 1");
    }
    return ran(ctx, ctx->device->rope(x->tensor.cview<float>(), first, theta,
                                      scaling ? &scaled : nullptr, inverse != 0,
                                      out->tensor.view<float>()));
  });
}

whale_rt_status whale_rt_rms_norm(whale_rt_context *ctx, whale_rt_tensor *x,
                                  whale_rt_tensor *weight, double eps,
                                  whale_rt_tensor *out) {
  return traced(ctx, "rms_norm", {out}, [&]() -> whale_rt_status {
    if (whale_rt_status s = needF32(
            ctx, "rms_norm", {{"x", x}, {"weight", weight}, {"out", out}}))
      return s;
    const Shape &sx = shapeOf(x);
    if (sx.empty() || shapeOf(weight) != Shape{sx.back()} || !(eps > 0))
      return ctx->invalid("rms_norm: weight must be [" +
                          std::to_string(sx.empty() ? 0 : sx.back()) +
                          "] and eps positive");
    if (whale_rt_status s = needShape(ctx, "rms_norm", out, sx))
      return s;
    return ran(ctx, ctx->device->rmsNorm(x->tensor.cview<float>(),
                                         weight->tensor.cview<float>(), eps,
                                         out->tensor.view<float>()));
  });
}

whale_rt_status whale_rt_embedding(whale_rt_context *ctx,
                                   whale_rt_tensor *table, whale_rt_tensor *ids,
                                   whale_rt_tensor *out) {
  return traced(ctx, "embedding", {out}, [&]() -> whale_rt_status {
    if (whale_rt_status s =
            needF32(ctx, "embedding", {{"table", table}, {"out", out}}))
      return s;
    if (!isIndex(ids) || shapeOf(table).size() != 2)
      return ctx->invalid("embedding: needs a [vocab, dim] f32 table and "
                          "i32 or i64 ids");
    Shape want = shapeOf(ids);
    want.push_back(shapeOf(table)[1]);
    if (whale_rt_status s = needShape(ctx, "embedding", out, want))
      return s;
    return ran(ctx, ctx->device->embedding(table->tensor.cview<float>(),
                                           indexView(ids),
                                           out->tensor.view<float>()));
  });
}

whale_rt_status whale_rt_cross_entropy(whale_rt_context *ctx,
                                       whale_rt_tensor *logits,
                                       whale_rt_tensor *labels,
                                       whale_rt_tensor *out) {
  return traced(ctx, "cross_entropy", {out}, [&]() -> whale_rt_status {
    // The logits f32, or bf16 (amp's storage); the loss f32.
    const bool bf16 = logits && logits->tensor.dtype() == DType::BF16;
    if (whale_rt_status s = bf16 ? needF32(ctx, "cross_entropy", {{"out", out}})
                                 : needF32(ctx, "cross_entropy",
                                           {{"logits", logits}, {"out", out}}))
      return s;
    const Shape &sl = shapeOf(logits);
    if (!isIndex(labels) || sl.empty() ||
        Shape(sl.begin(), sl.end() - 1) != shapeOf(labels))
      return ctx->invalid("cross_entropy: labels (i32 or i64) must have the "
                          "logits' shape without the class dimension");
    if (whale_rt_status s =
            needShape(ctx, "cross_entropy", out, shapeOf(labels)))
      return s;
    if (bf16)
      return ran(ctx, ctx->device->crossEntropyBf16(
                          logits->tensor.cview<uint16_t>(), indexView(labels),
                          out->tensor.view<float>()));
    return ran(ctx, ctx->device->crossEntropy(logits->tensor.cview<float>(),
                                              indexView(labels),
                                              out->tensor.view<float>()));
  });
}

whale_rt_status whale_rt_reduce(whale_rt_context *ctx, int32_t op,
                                whale_rt_tensor *x, int32_t num_axes,
                                const int64_t *axes, whale_rt_tensor *out) {
  return traced(ctx, "reduce", {out}, [&]() -> whale_rt_status {
    if (whale_rt_status s = needF32(ctx, "reduce", {{"x", x}, {"out", out}}))
      return s;
    const Shape &sx = shapeOf(x);
    std::vector<int64_t> ax(axes, axes + std::max(0, num_axes));
    for (size_t i = 0; i < ax.size(); ++i)
      if (ax[i] < 0 || ax[i] >= static_cast<int64_t>(sx.size()) ||
          (i && ax[i] <= ax[i - 1]))
        return ctx->invalid(
            "reduce: axes must be sorted, distinct and in range");
    if (op < WHALE_RT_SUM || op > WHALE_RT_MAX)
      return ctx->invalid("reduce: unknown op " + std::to_string(op));
    int64_t kept = 1;
    for (size_t d = 0; d < sx.size(); ++d)
      if (std::find(ax.begin(), ax.end(), static_cast<int64_t>(d)) == ax.end())
        kept *= sx[d];
    if (out->tensor.numel() != kept)
      return ctx->invalid("reduce: the output has " +
                          std::to_string(out->tensor.numel()) +
                          " elements, the result " + std::to_string(kept));
    return ran(ctx, ctx->device->reduce(static_cast<ReduceOp>(op),
                                        x->tensor.cview<float>(), ax,
                                        out->tensor.view<float>()));
  });
}

whale_rt_status whale_rt_reshape(whale_rt_context *ctx, whale_rt_tensor *x,
                                 whale_rt_tensor *out) {
  return traced(ctx, "reshape", {out}, [&]() -> whale_rt_status {
    if (!x || !out || x->tensor.dtype() != out->tensor.dtype() ||
        x->tensor.numel() != out->tensor.numel())
      return ctx->invalid("reshape: needs the same dtype and element count");
    return ran(ctx, ctx->device->copy(out->tensor.raw(), x->tensor.raw(),
                                      x->tensor.bytes()));
  });
}

whale_rt_status whale_rt_reshape_take(whale_rt_context *ctx,
                                      whale_rt_tensor *x, int32_t rank,
                                      const int64_t *shape,
                                      whale_rt_tensor **out) {
  return guarded(ctx, [&]() -> whale_rt_status {
    if (!x || !out || rank < 0 || (rank > 0 && !shape))
      return ctx->invalid("reshape_take: bad arguments");
    if (!x->tensor.raw() && x->tensor.numel() > 0)
      return ctx->invalid("reshape_take: the input's memory was taken before");
    auto t = std::make_unique<whale_rt_tensor>();
    t->tensor = std::move(x->tensor);
    t->host = x->host;
    if (Status st = t->tensor.reshape(Shape(shape, shape + rank)); !st) {
      x->tensor = std::move(t->tensor); // as it was
      return ctx->fail(st);
    }
    *out = t.get();
    ctx->tensors[t.get()] = std::move(t);
    return WHALE_RT_OK;
  });
}

whale_rt_status whale_rt_transpose(whale_rt_context *ctx, whale_rt_tensor *x,
                                   const int64_t *permutation,
                                   whale_rt_tensor *out) {
  return traced(ctx, "transpose", {out}, [&]() -> whale_rt_status {
    if (whale_rt_status s = needF32(ctx, "transpose", {{"x", x}, {"out", out}}))
      return s;
    const Shape &sx = shapeOf(x);
    std::vector<int64_t> perm(permutation, permutation + sx.size());
    std::vector<bool> seen(sx.size(), false);
    Shape want;
    for (int64_t p : perm) {
      if (p < 0 || p >= static_cast<int64_t>(sx.size()) || seen[p])
        return ctx->invalid("transpose: not a permutation");
      seen[p] = true;
      want.push_back(sx[p]);
    }
    if (whale_rt_status s = needShape(ctx, "transpose", out, want))
      return s;
    return ran(ctx, ctx->device->transpose(x->tensor.cview<float>(), perm,
                                           out->tensor.view<float>()));
  });
}

whale_rt_status whale_rt_slice(whale_rt_context *ctx, whale_rt_tensor *x,
                               int64_t axis, int64_t start, int64_t end,
                               whale_rt_tensor *out) {
  return traced(ctx, "slice", {out}, [&]() -> whale_rt_status {
    // Index tensors are sliced too: a rank's micro-batch of token ids.
    if (!x || !out || x->tensor.dtype() != out->tensor.dtype() ||
        (x->tensor.dtype() != DType::F32 && x->tensor.dtype() != DType::I32))
      return ctx->invalid("slice: 'x' and 'out' must both be f32 or both i32");
    const Shape &sx = shapeOf(x);
    if (axis < 0 || axis >= static_cast<int64_t>(sx.size()) || start < 0 ||
        start >= end || end > sx[axis])
      return ctx->invalid("slice: [" + std::to_string(start) + ", " +
                          std::to_string(end) + ") of axis " +
                          std::to_string(axis) + " does not fit " +
                          shapeString(sx));
    Shape want = sx;
    want[axis] = end - start;
    if (whale_rt_status s = needShape(ctx, "slice", out, want))
      return s;
    return ran(ctx, ctx->device->slice(x->tensor.raw(), sx, 4, axis, start, end,
                                       out->tensor.raw()));
  });
}

whale_rt_status whale_rt_concat(whale_rt_context *ctx, int32_t num_inputs,
                                whale_rt_tensor *const *inputs, int64_t axis,
                                whale_rt_tensor *out) {
  return traced(ctx, "concat", {out}, [&]() -> whale_rt_status {
    if (num_inputs < 1 || !inputs || !out)
      return ctx->invalid("concat: needs at least one input");
    std::vector<View<const float>> views;
    Shape want;
    for (int32_t i = 0; i < num_inputs; ++i) {
      if (whale_rt_status s = needF32(ctx, "concat", {{"input", inputs[i]}}))
        return s;
      const Shape &si = shapeOf(inputs[i]);
      if (i == 0) {
        want = si;
        if (axis < 0 || axis >= static_cast<int64_t>(si.size()))
          return ctx->invalid("concat: axis out of range");
      } else {
        Shape a = si, b = want;
        if (a.size() != b.size())
          return ctx->invalid("concat: inputs differ in rank");
        a[axis] = b[axis] = 0;
        if (a != b)
          return ctx->invalid("concat: inputs differ outside the axis");
        want[axis] += si[axis];
      }
      views.push_back(inputs[i]->tensor.cview<float>());
    }
    if (whale_rt_status s = needF32(ctx, "concat", {{"out", out}}))
      return s;
    if (whale_rt_status s = needShape(ctx, "concat", out, want))
      return s;
    return ran(ctx,
               ctx->device->concat(views, axis, out->tensor.view<float>()));
  });
}

} // extern "C"
