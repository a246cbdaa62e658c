//===- CApiMoe.cpp - the C ABI's mixture-of-experts routing ---------------===//
//
// Every entry checks the routing's shapes (runtime/ops/MoeMath.h) before the
// device moves a row: tokens [G, S, D], experts [G, S, k] (i32), gates
// like the experts, slots [E, G * C, D].
//
//===----------------------------------------------------------------------===//

#include "runtime/capi/CApiInternal.h"

using namespace whale::rt;
using namespace whale::rt::capi;

namespace {

/// The routing's extents from tokens [G, S, D], experts [G, S, k] and the
/// slots' shape [E, G * C, D], after checking them and the gates.
whale_rt_status moeShape(whale_rt_context *ctx, const char *op,
                         whale_rt_tensor *tokens, whale_rt_tensor *experts,
                         whale_rt_tensor *gates, const Shape &slotted,
                         MoeShape &m) {
  if (!experts || experts->tensor.dtype() != DType::I32)
    return ctx->invalid(std::string(op) + ": experts must be i32");
  const Shape &st = shapeOf(tokens), &se = shapeOf(experts);
  if (st.size() != 3 || se.size() != 3 || slotted.size() != 3 ||
      st[0] != se[0] || st[1] != se[1] || slotted[2] != st[2])
    return ctx->invalid(std::string(op) + ": tokens " + shapeString(st) +
                        ", experts " + shapeString(se) + " and slots " +
                        shapeString(slotted) +
                        " must be [G, S, D], [G, S, k] and [E, G * C, D]");
  m.groups = st[0];
  m.tokens = st[1];
  m.choices = se[2];
  m.width = st[2];
  m.experts = slotted[0];
  if (m.groups < 1 || m.choices < 1 || m.choices > m.experts ||
      slotted[1] % m.groups != 0 || slotted[1] / m.groups < 1)
    return ctx->invalid(std::string(op) + ": slots " + shapeString(slotted) +
                        " do not give each of " + std::to_string(m.groups) +
                        " groups a slot per expert for " +
                        std::to_string(m.choices) + " choices");
  m.capacity = slotted[1] / m.groups;
  if (gates) {
    if (whale_rt_status s = needF32(ctx, op, {{"gates", gates}}))
      return s;
    if (shapeOf(gates) != se)
      return ctx->invalid(std::string(op) + ": gates " +
                          shapeString(shapeOf(gates)) +
                          " must be the experts' shape " + shapeString(se));
  }
  return WHALE_RT_OK;
}

const int32_t *choicesOf(whale_rt_tensor *experts) {
  return static_cast<const int32_t *>(experts->tensor.raw());
}

const float *gatesOf(whale_rt_tensor *gates) {
  return gates ? gates->tensor.cview<float>().data : nullptr;
}

} // namespace

extern "C" {

whale_rt_status whale_rt_moe_dispatch(whale_rt_context *ctx,
                                      whale_rt_tensor *tokens,
                                      whale_rt_tensor *experts,
                                      whale_rt_tensor *gates,
                                      whale_rt_tensor *slotted) {
  return traced(ctx, "moe_dispatch", {slotted}, [&]() -> whale_rt_status {
    if (whale_rt_status s = needF32(ctx, "moe_dispatch",
                                    {{"tokens", tokens}, {"slots", slotted}}))
      return s;
    MoeShape m;
    if (whale_rt_status s = moeShape(ctx, "moe_dispatch", tokens, experts,
                                     gates, shapeOf(slotted), m))
      return s;
    return ran(ctx, ctx->device->moeDispatch(
                        m, tokens->tensor.cview<float>().data,
                        choicesOf(experts), gatesOf(gates),
                        slotted->tensor.view<float>().data));
  });
}

whale_rt_status whale_rt_moe_combine(whale_rt_context *ctx,
                                     whale_rt_tensor *slotted,
                                     whale_rt_tensor *experts,
                                     whale_rt_tensor *gates,
                                     whale_rt_tensor *out) {
  return traced(ctx, "moe_combine", {out}, [&]() -> whale_rt_status {
    if (whale_rt_status s = needF32(ctx, "moe_combine",
                                    {{"slots", slotted}, {"out", out}}))
      return s;
    MoeShape m;
    if (whale_rt_status s = moeShape(ctx, "moe_combine", out, experts, gates,
                                     shapeOf(slotted), m))
      return s;
    return ran(ctx, ctx->device->moeCombine(
                        m, slotted->tensor.cview<float>().data,
                        choicesOf(experts), gatesOf(gates),
                        out->tensor.view<float>().data));
  });
}

whale_rt_status whale_rt_moe_gate_grad(whale_rt_context *ctx,
                                       whale_rt_tensor *tokens,
                                       whale_rt_tensor *slotted,
                                       whale_rt_tensor *experts,
                                       whale_rt_tensor *dgates) {
  return traced(ctx, "moe_gate_grad", {dgates}, [&]() -> whale_rt_status {
    if (whale_rt_status s = needF32(
            ctx, "moe_gate_grad",
            {{"tokens", tokens}, {"slots", slotted}, {"dgates", dgates}}))
      return s;
    MoeShape m;
    if (whale_rt_status s = moeShape(ctx, "moe_gate_grad", tokens, experts,
                                     dgates, shapeOf(slotted), m))
      return s;
    return ran(ctx, ctx->device->moeGateGrad(
                        m, tokens->tensor.cview<float>().data,
                        slotted->tensor.cview<float>().data,
                        choicesOf(experts), dgates->tensor.view<float>().data));
  });
}

whale_rt_status whale_rt_one_hot(whale_rt_context *ctx, whale_rt_tensor *ids,
                                 int64_t classes, whale_rt_tensor *out) {
  return traced(ctx, "one_hot", {out}, [&]() -> whale_rt_status {
    if (!ids || ids->tensor.dtype() != DType::I32)
      return ctx->invalid("one_hot: ids must be i32");
    if (whale_rt_status s = needF32(ctx, "one_hot", {{"out", out}}))
      return s;
    Shape want = shapeOf(ids);
    want.push_back(classes);
    if (classes < 1)
      return ctx->invalid("one_hot: needs at least one class, got " +
                          std::to_string(classes));
    if (whale_rt_status s = needShape(ctx, "one_hot", out, want))
      return s;
    return ran(ctx, ctx->device->oneHot(choicesOf(ids), ids->tensor.numel(),
                                        classes,
                                        out->tensor.view<float>().data));
  });
}

} // extern "C"
