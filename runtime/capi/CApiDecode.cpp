//===- CApiDecode.cpp - a decoding step over a key/value cache ------------===//
//
// whale_rt_kv_attention, and the position a decoding step's ops read: an
// i32 scalar tensor (the text's position), read on the host before the
// kernels run, so that a GPU's tensor serves too.
//
//===----------------------------------------------------------------------===//

#include "runtime/capi/CApiInternal.h"
#include "runtime/ops/KvAttention.h"

namespace whale::rt::capi {

whale_rt_status readPosition(whale_rt_context *ctx, const char *op,
                             whale_rt_tensor *position, int64_t &first) {
  if (!position || position->tensor.dtype() != DType::I32 ||
      !shapeOf(position).empty())
    return ctx->invalid(std::string(op) +
                        ": the position must be an i32 scalar");
  HostData host(ctx, position, /*writeBack=*/false);
  if (Status st = host.load(); !st)
    return ctx->fail(st);
  first = host.as<const int32_t>()[0];
  if (first < 0)
    return ctx->invalid(std::string(op) + ": the position " +
                        std::to_string(first) + " is negative");
  return WHALE_RT_OK;
}

} // namespace whale::rt::capi

using namespace whale::rt;
using namespace whale::rt::capi;

extern "C" {

whale_rt_status whale_rt_kv_attention(whale_rt_context *ctx, whale_rt_tensor *q,
                                      whale_rt_tensor *k, whale_rt_tensor *v,
                                      whale_rt_tensor *key_cache,
                                      whale_rt_tensor *value_cache,
                                      whale_rt_tensor *position, double scale,
                                      whale_rt_tensor *out,
                                      whale_rt_tensor *new_key_cache,
                                      whale_rt_tensor *new_value_cache) {
  return traced(
      ctx, "kv_attention", {out, new_key_cache, new_value_cache},
      [&]() -> whale_rt_status {
        if (whale_rt_status s = needF32(ctx, "kv_attention",
                                        {{"q", q},
                                         {"k", k},
                                         {"v", v},
                                         {"key_cache", key_cache},
                                         {"value_cache", value_cache},
                                         {"out", out},
                                         {"new_key_cache", new_key_cache},
                                         {"new_value_cache", new_value_cache}}))
          return s;
        int64_t first = 0;
        if (whale_rt_status s =
                readPosition(ctx, "kv_attention", position, first))
          return s;
        const Shape &cache = shapeOf(key_cache);
        const Shape &rows = shapeOf(k);
        KvAttentionShape d;
        if (Status st = kvAttentionShape(shapeOf(q), cache, first, d); !st)
          return ctx->fail(st);
        if (rows != Shape{d.batch, d.keyHeads, d.rows, d.width} ||
            shapeOf(v) != rows || shapeOf(value_cache) != cache ||
            shapeOf(new_key_cache) != cache ||
            shapeOf(new_value_cache) != cache)
          return ctx->invalid(
              "kv_attention: k and v must be " +
              shapeString({d.batch, d.keyHeads, d.rows, d.width}) +
              " and the four caches " + shapeString(cache));
        if (whale_rt_status s = needShape(ctx, "kv_attention", out, shapeOf(q)))
          return s;
        Device &dev = *ctx->device;
        const int64_t rowBytes = d.width * int64_t(sizeof(float));
        for (auto [from, to, fresh] : {std::tuple{key_cache, new_key_cache, k},
                                       {value_cache, new_value_cache, v}}) {
          // The old rows, unless written in place; then each head's new
          // rows at the position.
          if (to != from)
            if (Status st = dev.copy(to->tensor.raw(), from->tensor.raw(),
                                     to->tensor.bytes());
                !st)
              return ctx->fail(st);
          auto *dst = static_cast<char *>(to->tensor.raw());
          const auto *src = static_cast<const char *>(fresh->tensor.raw());
          for (int64_t head = 0; head < d.batch * d.keyHeads; ++head)
            if (Status st =
                    dev.copy(dst + (head * d.capacity + first) * rowBytes,
                             src + head * d.rows * rowBytes, d.rows * rowBytes);
                !st)
              return ctx->fail(st);
        }
        return ran(ctx,
                   dev.kvAttention(q->tensor.cview<float>(),
                                   new_key_cache->tensor.cview<float>(),
                                   new_value_cache->tensor.cview<float>(),
                                   first, scale, out->tensor.view<float>()));
      });
}

} // extern "C"
