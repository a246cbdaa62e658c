//===- CApiTopK.cpp - the C ABI's top-k ------------------------------------===//

#include "runtime/capi/CApiInternal.h"

using namespace whale::rt;
using namespace whale::rt::capi;

namespace {

/// Checks x [..., N] (f32, N >= k >= 1) and that `out` is x's shape with k
/// for N; the result's shape in `want`.
whale_rt_status topkShape(whale_rt_context *ctx, const char *op,
                          whale_rt_tensor *x, int64_t k, Shape &want) {
  const Shape &sx = shapeOf(x);
  if (sx.empty() || k < 1 || k > sx.back())
    return ctx->invalid(std::string(op) + ": k = " + std::to_string(k) +
                        " of the last dimension of " + shapeString(sx) +
                        ": needs rank >= 1 and 1 <= k <= that dimension");
  want = sx;
  want.back() = k;
  return WHALE_RT_OK;
}

} // namespace

extern "C" {

whale_rt_status whale_rt_topk(whale_rt_context *ctx, whale_rt_tensor *x,
                              int64_t k, whale_rt_tensor *values,
                              whale_rt_tensor *positions) {
  whale_rt_tensor *out = values ? values : positions;
  return traced(ctx, "topk", {out}, [&]() -> whale_rt_status {
    if (whale_rt_status s = needF32(ctx, "topk", {{"x", x}}))
      return s;
    if (!values && !positions)
      return ctx->invalid("topk: neither values nor positions asked for");
    Shape want;
    if (whale_rt_status s = topkShape(ctx, "topk", x, k, want))
      return s;
    if (values) {
      if (whale_rt_status s = needF32(ctx, "topk", {{"values", values}}))
        return s;
      if (whale_rt_status s = needShape(ctx, "topk", values, want))
        return s;
    }
    if (positions) {
      if (positions->tensor.dtype() != DType::I32)
        return ctx->invalid("topk: positions must be i32");
      if (whale_rt_status s = needShape(ctx, "topk", positions, want))
        return s;
    }
    return ran(ctx, ctx->device->topk(
                        x->tensor.cview<float>(), k,
                        values ? values->tensor.view<float>().data : nullptr,
                        positions ? static_cast<int32_t *>(
                                        positions->tensor.raw())
                                  : nullptr));
  });
}

whale_rt_status whale_rt_topk_grad(whale_rt_context *ctx, whale_rt_tensor *x,
                                   int64_t k, whale_rt_tensor *dy,
                                   whale_rt_tensor *dx) {
  return traced(ctx, "topk_grad", {dx}, [&]() -> whale_rt_status {
    if (whale_rt_status s =
            needF32(ctx, "topk_grad", {{"x", x}, {"dy", dy}, {"dx", dx}}))
      return s;
    Shape want;
    if (whale_rt_status s = topkShape(ctx, "topk_grad", x, k, want))
      return s;
    if (shapeOf(dy) != want || shapeOf(dx) != shapeOf(x))
      return ctx->invalid("topk_grad: dy must be " + shapeString(want) +
                          " and dx the shape of x");
    return ran(ctx, ctx->device->topkBackward(x->tensor.cview<float>(), k,
                                              dy->tensor.cview<float>(),
                                              dx->tensor.view<float>()));
  });
}

} // extern "C"
