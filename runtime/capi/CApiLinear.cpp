//===- CApiLinear.cpp - linear layers with GEMM epilogues -----------------===//
//
// The C ABI of the ops -whale-gemm-epilogues makes: a linear layer's
// forward (product, bias, GELU), its weight and bias gradients, and the
// gradient through a product and the GELU before it. Each is one GEMM with
// an epilogue on a GPU; the checks here are the same on every device. And
// the op -whale-fuse-rounded-sums makes of a bias gradient beside the
// rounding of the gradient it sums: one pass over it on a GPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/capi/CApiInternal.h"

#include <algorithm>
#include <string>

using namespace whale::rt;
using namespace whale::rt::capi;

namespace {

/// A weight's inner and outer widths: [K, N], or [N, K] when transposed.
struct WeightDims {
  int64_t k, n;
};

/// The widths of `w` (a matrix) for an input whose last dimension is `k`.
whale_rt_status weightDims(whale_rt_context *ctx, const char *op,
                           const Shape &input, const Shape &w, bool transposed,
                           WeightDims &out) {
  if (input.size() < 2 || w.size() != 2)
    return ctx->invalid(std::string(op) + ": the input needs rank >= 2 and " +
                        "the weight rank 2, got " + shapeString(input) +
                        " and " + shapeString(w));
  out.k = transposed ? w[1] : w[0];
  out.n = transposed ? w[0] : w[1];
  if (out.k != input.back())
    return ctx->invalid(std::string(op) + ": " + shapeString(input) + " and " +
                        shapeString(w) + " do not fit");
  return WHALE_RT_OK;
}

/// `input`'s shape with its last width `n`: the product's.
Shape productShape(const Shape &input, int64_t n) {
  Shape s = input;
  s.back() = n;
  return s;
}

} // namespace

whale_rt_status whale_rt_linear(whale_rt_context *ctx, whale_rt_tensor *x,
                                whale_rt_tensor *w, whale_rt_tensor *bias,
                                whale_rt_tensor *out, whale_rt_tensor *pre,
                                int32_t transpose_w, int32_t gelu) {
  return traced(ctx, "linear", {out, pre}, [&]() -> whale_rt_status {
    if (pre && !gelu)
      return ctx->invalid("linear: 'pre' is the sum before the GELU; it "
                          "needs gelu");
    if (!out)
      return ctx->invalid("linear: 'out' is null");
    bool bf16;
    if (whale_rt_status s = matmulTypes(ctx, "linear", {{"x", x}, {"w", w}},
                                        {{"out", out}, {"pre", pre}}, bf16))
      return s;
    if (whale_rt_status s = needF32(ctx, "linear", {{"bias", bias}}))
      return s;
    // The preactivation is kept in fp32 for the GELU's gradient, or stored
    // as the output is.
    if (pre && pre->tensor.dtype() != out->tensor.dtype() &&
        pre->tensor.dtype() != DType::F32)
      return ctx->invalid(
          std::string("linear: 'pre' is ") + dtypeName(pre->tensor.dtype()) +
          ", expected f32 or 'out''s type, " + dtypeName(out->tensor.dtype()));
    WeightDims d;
    if (whale_rt_status s =
            weightDims(ctx, "linear", shapeOf(x), shapeOf(w), transpose_w, d))
      return s;
    if (shapeOf(bias) != Shape{d.n})
      return ctx->invalid("linear: bias " + shapeString(shapeOf(bias)) +
                          " must be [" + std::to_string(d.n) + "]");
    const Shape want = productShape(shapeOf(x), d.n);
    if (whale_rt_status s = needShape(ctx, "linear", out, want))
      return s;
    if (pre)
      if (whale_rt_status s = needShape(ctx, "linear", pre, want))
        return s;
    if (bf16) {
      MixedOut preOut = pre ? mixedOut(pre) : MixedOut{};
      return ran(ctx,
                 ctx->device->linearBf16(
                     x->tensor.cview<uint16_t>(), w->tensor.cview<uint16_t>(),
                     bias->tensor.cview<float>(), mixedOut(out),
                     pre ? &preOut : nullptr, transpose_w, gelu));
    }
    View<float> preView;
    if (pre)
      preView = pre->tensor.view<float>();
    return ran(ctx, ctx->device->linear(
                        x->tensor.cview<float>(), w->tensor.cview<float>(),
                        bias->tensor.cview<float>(), out->tensor.view<float>(),
                        pre ? &preView : nullptr, transpose_w, gelu));
  });
}

whale_rt_status
whale_rt_linear_weight_grad(whale_rt_context *ctx, whale_rt_tensor *x,
                            whale_rt_tensor *dout, whale_rt_tensor *dw,
                            whale_rt_tensor *dbias, int32_t transpose_w) {
  return traced(
      ctx, "linear_weight_grad", {dw, dbias}, [&]() -> whale_rt_status {
        bool bf16;
        if (whale_rt_status s =
                matmulTypes(ctx, "linear_weight_grad",
                            {{"x", x}, {"dout", dout}}, {}, bf16))
          return s;
        if (whale_rt_status s = needF32(ctx, "linear_weight_grad",
                                        {{"dw", dw}, {"dbias", dbias}}))
          return s;
        WeightDims d;
        if (whale_rt_status s =
                weightDims(ctx, "linear_weight_grad", shapeOf(x), shapeOf(dw),
                           transpose_w, d))
          return s;
        if (shapeOf(dout) != productShape(shapeOf(x), d.n))
          return ctx->invalid("linear_weight_grad: dout is " +
                              shapeString(shapeOf(dout)) + ", the product " +
                              shapeString(productShape(shapeOf(x), d.n)));
        if (whale_rt_status s =
                needShape(ctx, "linear_weight_grad", dbias, Shape{d.n}))
          return s;
        if (bf16)
          return ran(ctx, ctx->device->linearWeightGradBf16(
                              x->tensor.cview<uint16_t>(),
                              dout->tensor.cview<uint16_t>(),
                              dw->tensor.view<float>(),
                              dbias->tensor.view<float>(), transpose_w));
        return ran(ctx,
                   ctx->device->linearWeightGrad(
                       x->tensor.cview<float>(), dout->tensor.cview<float>(),
                       dw->tensor.view<float>(), dbias->tensor.view<float>(),
                       transpose_w));
      });
}

whale_rt_status
whale_rt_gelu_matmul_grad(whale_rt_context *ctx, whale_rt_tensor *pre,
                          whale_rt_tensor *w, whale_rt_tensor *dout,
                          whale_rt_tensor *dpre, int32_t transpose_w) {
  return traced(ctx, "gelu_matmul_grad", {dpre}, [&]() -> whale_rt_status {
    bool bf16;
    if (whale_rt_status s =
            matmulTypes(ctx, "gelu_matmul_grad", {{"w", w}, {"dout", dout}},
                        {{"pre", pre}, {"dpre", dpre}}, bf16))
      return s;
    if (!pre || !dpre)
      return ctx->invalid(std::string("gelu_matmul_grad: '") +
                          (pre ? "dpre" : "pre") + "' is null");
    if (dpre->tensor.dtype() != pre->tensor.dtype())
      return ctx->invalid(std::string("gelu_matmul_grad: 'dpre' is ") +
                          dtypeName(dpre->tensor.dtype()) +
                          ", expected 'pre''s type, " +
                          dtypeName(pre->tensor.dtype()));
    WeightDims d;
    if (whale_rt_status s = weightDims(ctx, "gelu_matmul_grad", shapeOf(pre),
                                       shapeOf(w), transpose_w, d))
      return s;
    if (shapeOf(dout) != productShape(shapeOf(pre), d.n))
      return ctx->invalid("gelu_matmul_grad: dout is " +
                          shapeString(shapeOf(dout)) + ", the product " +
                          shapeString(productShape(shapeOf(pre), d.n)));
    if (whale_rt_status s =
            needShape(ctx, "gelu_matmul_grad", dpre, shapeOf(pre)))
      return s;
    if (bf16)
      return ran(ctx, ctx->device->geluMatmulGradBf16(
                          MixedIn{pre->tensor.raw(), pre->tensor.dtype(),
                                  pre->tensor.shape()},
                          w->tensor.cview<uint16_t>(),
                          dout->tensor.cview<uint16_t>(), mixedOut(dpre),
                          transpose_w));
    return ran(ctx, ctx->device->geluMatmulGrad(
                        pre->tensor.cview<float>(), w->tensor.cview<float>(),
                        dout->tensor.cview<float>(), dpre->tensor.view<float>(),
                        transpose_w));
  });
}

whale_rt_status whale_rt_round_and_sum(whale_rt_context *ctx,
                                       whale_rt_tensor *x,
                                       whale_rt_tensor *rounded,
                                       whale_rt_tensor *sum) {
  return traced(ctx, "round_and_sum", {rounded, sum}, [&]() -> whale_rt_status {
    if (whale_rt_status s =
            needF32(ctx, "round_and_sum", {{"x", x}, {"sum", sum}}))
      return s;
    if (!rounded)
      return ctx->invalid("round_and_sum: 'rounded' is null");
    if (rounded->tensor.dtype() != DType::BF16)
      return ctx->invalid(std::string("round_and_sum: 'rounded' is ") +
                          dtypeName(rounded->tensor.dtype()) +
                          ", expected bf16");
    if (whale_rt_status s =
            needShape(ctx, "round_and_sum", rounded, shapeOf(x)))
      return s;
    const Shape &xs = shapeOf(x), &ss = shapeOf(sum);
    if (ss.empty() || ss.size() >= xs.size() ||
        !std::equal(ss.begin(), ss.end(), xs.end() - ss.size()))
      return ctx->invalid("round_and_sum: 'sum' is " + shapeString(ss) +
                          ", expected the last dimensions of x " +
                          shapeString(xs) +
                          " (at least one leading dimension summed)");
    return ran(ctx, ctx->device->roundAndSum(x->tensor.cview<float>(),
                                             rounded->tensor.view<uint16_t>(),
                                             sum->tensor.view<float>()));
  });
}
