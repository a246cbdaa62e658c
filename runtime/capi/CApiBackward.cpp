//===- CApiBackward.cpp - the C ABI's gradients and optimizer steps -------===//

#include "runtime/capi/CApiInternal.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <string>

using namespace whale::rt;
using namespace whale::rt::capi;

namespace {

/// The flags of whale_rt_attention's `form`, or an error for bits the ABI
/// does not define (a caller built against a later header).
whale_rt_status attentionForm(whale_rt_context *ctx, const char *op,
                              int32_t flags, AttentionForm &form) {
  constexpr int32_t known =
      WHALE_RT_ATTENTION_CAUSAL | WHALE_RT_ATTENTION_SEQUENCE_MAJOR;
  if (flags & ~known)
    return ctx->invalid(std::string(op) + ": form " + std::to_string(flags) +
                        " has flags this runtime does not know");
  form.causal = (flags & WHALE_RT_ATTENTION_CAUSAL) != 0;
  form.sequenceMajor = (flags & WHALE_RT_ATTENTION_SEQUENCE_MAJOR) != 0;
  return WHALE_RT_OK;
}

/// A gradient output, when present, must have its input's shape.
whale_rt_status sameShape(whale_rt_context *ctx, const char *op,
                          whale_rt_tensor *grad, whale_rt_tensor *of) {
  if (grad && shapeOf(grad) != shapeOf(of))
    return ctx->invalid(std::string(op) + ": a gradient is " +
                        shapeString(shapeOf(grad)) + " for an input of " +
                        shapeString(shapeOf(of)));
  return WHALE_RT_OK;
}

/// The views of a two-input op's gradients, after checking each one asked
/// for has its input's shape; one not asked for (null) stays empty.
whale_rt_status gradientViews(whale_rt_context *ctx, const char *op,
                              whale_rt_tensor *a, whale_rt_tensor *b,
                              whale_rt_tensor *da, whale_rt_tensor *db,
                              View<float> &va, View<float> &vb) {
  if (whale_rt_status s = sameShape(ctx, op, da, a))
    return s;
  if (whale_rt_status s = sameShape(ctx, op, db, b))
    return s;
  if (da)
    va = da->tensor.view<float>();
  if (db)
    vb = db->tensor.view<float>();
  return WHALE_RT_OK;
}

/// Zeroed f32 state beside a parameter, made on first use.
whale_rt_status
optimizerState(whale_rt_context *ctx, whale_rt_tensor *param, size_t count,
               std::vector<std::unique_ptr<whale_rt_tensor>> *&out) {
  auto &state = ctx->optimizerState[param];
  if (!state.empty() && state.front()->tensor.shape() != shapeOf(param))
    return ctx->invalid("optimizer state: the tensor's state has another "
                        "shape (a released tensor's?)");
  while (state.size() < count) {
    auto t = std::make_unique<whale_rt_tensor>();
    if (Status st =
            Tensor::create(*ctx->device, DType::F32, shapeOf(param), t->tensor);
        !st)
      return ctx->fail(st);
    if (Status st = ctx->device->fill(t->tensor.raw(), DType::F32,
                                      t->tensor.numel(), 0);
        !st)
      return ctx->fail(st);
    t->host = ctx->device->hostAddressable();
    state.push_back(std::move(t));
  }
  out = &state;
  return WHALE_RT_OK;
}

/// Adam's hyperparameters as adam_update requires them.
bool adamValid(const AdamParams &p) {
  return p.step >= 1 && p.lr >= 0 && p.beta1 >= 0 && p.beta1 < 1 &&
         p.beta2 >= 0 && p.beta2 < 1 && p.eps > 0 && p.weightDecay >= 0;
}

/// A parameter's Adam update with its gradient and moments (created
/// zeroed at first use); both tensors f32 and present, checked by the
/// caller.
whale_rt_status adamSlot(whale_rt_context *ctx, whale_rt_tensor *param,
                         whale_rt_tensor *grad, Device::AdamSlot &out) {
  std::vector<std::unique_ptr<whale_rt_tensor>> *state;
  if (whale_rt_status s = optimizerState(ctx, param, 2, state))
    return s;
  out = {param->tensor.view<float>(), grad->tensor.cview<float>(),
         static_cast<float *>((*state)[0]->tensor.raw()),
         static_cast<float *>((*state)[1]->tensor.raw())};
  return WHALE_RT_OK;
}

/// One parameter's SGD update, with the checks every entry point makes.
whale_rt_status sgdUpdate(whale_rt_context *ctx, whale_rt_tensor *param,
                          whale_rt_tensor *grad, const SgdParams &p) {
  return traced(ctx, "sgd_update", {param}, [&]() -> whale_rt_status {
    if (whale_rt_status s =
            needF32(ctx, "sgd_update", {{"param", param}, {"grad", grad}}))
      return s;
    if (shapeOf(grad) != shapeOf(param) || !(p.rate() >= 0) || p.momentum < 0 ||
        p.momentum >= 1 || p.weightDecay < 0)
      return ctx->invalid(
          "sgd_update: needs a gradient shaped like the parameter, "
          "lr >= 0, momentum in [0, 1), weight_decay >= 0");
    float *velocity = nullptr;
    if (p.momentum > 0) {
      std::vector<std::unique_ptr<whale_rt_tensor>> *state;
      if (whale_rt_status s = optimizerState(ctx, param, 1, state))
        return s;
      velocity = static_cast<float *>((*state)[0]->tensor.raw());
    }
    return ran(ctx,
               ctx->device->sgdStep(param->tensor.view<float>(),
                                    grad->tensor.cview<float>(), velocity, p));
  });
}

/// One parameter's Adam update, with the checks every entry point makes.
whale_rt_status adamUpdate(whale_rt_context *ctx, whale_rt_tensor *param,
                           whale_rt_tensor *grad, const AdamParams &p) {
  return traced(ctx, "adam_update", {param}, [&]() -> whale_rt_status {
    if (whale_rt_status s =
            needF32(ctx, "adam_update", {{"param", param}, {"grad", grad}}))
      return s;
    if (shapeOf(grad) != shapeOf(param) || !adamValid(p))
      return ctx->invalid(
          "adam_update: needs a gradient shaped like the parameter, "
          "step >= 1, lr >= 0, betas in [0, 1), eps > 0, weight_decay >= 0");
    Device::AdamSlot slot;
    if (whale_rt_status s = adamSlot(ctx, param, grad, slot))
      return s;
    return ran(ctx,
               ctx->device->adamStep(slot.param, slot.grad, slot.m, slot.v, p));
  });
}

/// The context's step and learning-rate scale for an update that reads
/// them (whale_rt_*_step): scheduled, so a captured step takes each
/// replay's.
template <class Params> Params scheduled(whale_rt_context *ctx, Params p) {
  p.lrScale = ctx->lrScale;
  p.scheduled = true;
  return p;
}

/// Layernorm's gradients, dx plus `residual` where given.
whale_rt_status layerNormGrad(whale_rt_context *ctx, whale_rt_tensor *x,
                              whale_rt_tensor *gamma, double eps,
                              whale_rt_tensor *dy, whale_rt_tensor *residual,
                              whale_rt_tensor *dx, whale_rt_tensor *dgamma,
                              whale_rt_tensor *dbeta) {
  return traced(
      ctx, "layernorm_grad", {dx, dgamma, dbeta}, [&]() -> whale_rt_status {
        if (whale_rt_status s = needF32(ctx, "layernorm_grad",
                                        {{"x", x},
                                         {"gamma", gamma},
                                         {"dy", dy},
                                         {"dx", dx},
                                         {"dgamma", dgamma},
                                         {"dbeta", dbeta}}))
          return s;
        if (residual)
          if (whale_rt_status s =
                  needF32(ctx, "layernorm_grad", {{"residual", residual}}))
            return s;
        const Shape &sx = shapeOf(x);
        if (sx.empty() || shapeOf(gamma) != Shape{sx.back()} ||
            shapeOf(dy) != sx || shapeOf(dx) != sx ||
            (residual && shapeOf(residual) != sx) ||
            shapeOf(dgamma) != shapeOf(gamma) ||
            shapeOf(dbeta) != shapeOf(gamma) || !(eps > 0))
          return ctx->invalid("layernorm_grad: shapes do not fit " +
                              shapeString(sx));
        if (!residual)
          return ran(ctx,
                     ctx->device->layerNormBackward(
                         x->tensor.cview<float>(), gamma->tensor.cview<float>(),
                         eps, dy->tensor.cview<float>(),
                         dx->tensor.view<float>(), dgamma->tensor.view<float>(),
                         dbeta->tensor.view<float>()));
        return ran(ctx,
                   ctx->device->layerNormBackwardResidual(
                       x->tensor.cview<float>(), gamma->tensor.cview<float>(),
                       eps, dy->tensor.cview<float>(),
                       residual->tensor.cview<float>(),
                       dx->tensor.view<float>(), dgamma->tensor.view<float>(),
                       dbeta->tensor.view<float>()));
      });
}

} // namespace

extern "C" {

whale_rt_status whale_rt_broadcast(whale_rt_context *ctx, whale_rt_tensor *x,
                                   whale_rt_tensor *out) {
  return traced(ctx, "broadcast", {out}, [&]() -> whale_rt_status {
    if (whale_rt_status s = needF32(ctx, "broadcast", {{"x", x}, {"out", out}}))
      return s;
    const Shape &sx = shapeOf(x), &so = shapeOf(out);
    bool fits = sx.size() <= so.size();
    for (size_t i = 0; fits && i < sx.size(); ++i) {
      int64_t a = sx[sx.size() - 1 - i], b = so[so.size() - 1 - i];
      fits = a == b || a == 1;
    }
    if (!fits)
      return ctx->invalid("broadcast: " + shapeString(sx) +
                          " does not broadcast to " + shapeString(so));
    return ran(ctx, ctx->device->broadcastTo(x->tensor.cview<float>(),
                                             out->tensor.view<float>()));
  });
}

whale_rt_status whale_rt_matmul_grad(whale_rt_context *ctx, whale_rt_tensor *a,
                                     whale_rt_tensor *b, whale_rt_tensor *dout,
                                     whale_rt_tensor *da, whale_rt_tensor *db,
                                     int32_t transpose_a, int32_t transpose_b) {
  return traced(ctx, "matmul_grad", {da, db}, [&]() -> whale_rt_status {
    bool bf16;
    if (whale_rt_status s = matmulTypes(ctx, "matmul_grad",
                                        {{"a", a}, {"b", b}, {"dout", dout}},
                                        {{"da", da}, {"db", db}}, bf16))
      return s;
    View<float> va, vb;
    if (whale_rt_status s = sameShape(ctx, "matmul_grad", da, a))
      return s;
    if (whale_rt_status s = sameShape(ctx, "matmul_grad", db, b))
      return s;
    const Shape &sa = shapeOf(a), &sb = shapeOf(b);
    if (sa.size() < 2 || sb.size() < 2)
      return ctx->invalid("matmul_grad: operands need rank >= 2");
    int64_t m = transpose_a ? sa[sa.size() - 1] : sa[sa.size() - 2];
    int64_t n = transpose_b ? sb[sb.size() - 2] : sb[sb.size() - 1];
    Shape want(sa.begin(), sa.end() - 2);
    want.push_back(m);
    want.push_back(n);
    if (shapeOf(dout) != want)
      return ctx->invalid("matmul_grad: dout is " + shapeString(shapeOf(dout)) +
                          ", the product " + shapeString(want));
    if (bf16) {
      MixedOut ma = da ? mixedOut(da) : MixedOut{},
               mb = db ? mixedOut(db) : MixedOut{};
      return ran(ctx,
                 ctx->device->matmulBf16Backward(
                     a->tensor.cview<uint16_t>(), b->tensor.cview<uint16_t>(),
                     dout->tensor.cview<uint16_t>(), da ? &ma : nullptr,
                     db ? &mb : nullptr, transpose_a, transpose_b));
    }
    // f32 throughout (matmulTypes: no bf16 output without bf16 inputs).
    if (da)
      va = da->tensor.view<float>();
    if (db)
      vb = db->tensor.view<float>();
    return ran(ctx, ctx->device->matmulBackward(
                        a->tensor.cview<float>(), b->tensor.cview<float>(),
                        dout->tensor.cview<float>(), da ? &va : nullptr,
                        db ? &vb : nullptr, transpose_a, transpose_b));
  });
}

whale_rt_status whale_rt_binary_grad(whale_rt_context *ctx, int32_t op,
                                     whale_rt_tensor *a, whale_rt_tensor *b,
                                     whale_rt_tensor *dout, whale_rt_tensor *da,
                                     whale_rt_tensor *db) {
  return traced(ctx, "binary_grad", {da, db}, [&]() -> whale_rt_status {
    if (whale_rt_status s =
            needF32(ctx, "binary_grad", {{"a", a}, {"b", b}, {"dout", dout}}))
      return s;
    if (op < WHALE_RT_ADD || op > WHALE_RT_DIV)
      return ctx->invalid("binary_grad: unknown op " + std::to_string(op));
    View<float> va, vb;
    if (whale_rt_status s =
            gradientViews(ctx, "binary_grad", a, b, da, db, va, vb))
      return s;
    return ran(ctx, ctx->device->binaryBackward(
                        static_cast<BinaryOp>(op), a->tensor.cview<float>(),
                        b->tensor.cview<float>(), dout->tensor.cview<float>(),
                        da ? &va : nullptr, db ? &vb : nullptr));
  });
}

whale_rt_status whale_rt_unary_grad(whale_rt_context *ctx, int32_t op,
                                    whale_rt_tensor *x, whale_rt_tensor *y,
                                    whale_rt_tensor *dy, whale_rt_tensor *dx) {
  return traced(ctx, "unary_grad", {dx}, [&]() -> whale_rt_status {
    if (whale_rt_status s = needF32(
            ctx, "unary_grad", {{"x", x}, {"y", y}, {"dy", dy}, {"dx", dx}}))
      return s;
    if (op < WHALE_RT_NEG || op > WHALE_RT_SQRT)
      return ctx->invalid("unary_grad: unknown op " + std::to_string(op));
    for (whale_rt_tensor *t : {y, dy, dx})
      if (shapeOf(t) != shapeOf(x))
        return ctx->invalid("unary_grad: every tensor must be " +
                            shapeString(shapeOf(x)));
    return ran(ctx, ctx->device->unaryBackward(
                        static_cast<UnaryOp>(op), x->tensor.cview<float>(),
                        y->tensor.cview<float>(), dy->tensor.cview<float>(),
                        dx->tensor.view<float>()));
  });
}

whale_rt_status whale_rt_attention(whale_rt_context *ctx, whale_rt_tensor *q,
                                   whale_rt_tensor *k, whale_rt_tensor *v,
                                   double scale, int32_t form,
                                   whale_rt_tensor *out) {
  return traced(ctx, "attention", {out}, [&]() -> whale_rt_status {
    // q, k and v all f32, or all bf16 (amp's storage: out f32 or bf16).
    bool bf16;
    if (whale_rt_status s =
            matmulTypes(ctx, "attention", {{"q", q}, {"k", k}, {"v", v}},
                        {{"out", out}}, bf16))
      return s;
    if (!out)
      return ctx->invalid("attention: 'out' is null");
    if (shapeOf(k) != shapeOf(v) || shapeOf(out) != shapeOf(q))
      return ctx->invalid("attention: k and v, and q and out, must be alike");
    AttentionForm f;
    if (whale_rt_status s = attentionForm(ctx, "attention", form, f))
      return s;
    if (bf16)
      return ran(ctx, ctx->device->attentionBf16(q->tensor.cview<uint16_t>(),
                                                 k->tensor.cview<uint16_t>(),
                                                 v->tensor.cview<uint16_t>(),
                                                 scale, f, mixedOut(out)));
    if (whale_rt_status s = needF32(ctx, "attention", {{"out", out}}))
      return s;
    return ran(ctx, ctx->device->attention(q->tensor.cview<float>(),
                                           k->tensor.cview<float>(),
                                           v->tensor.cview<float>(), scale, f,
                                           out->tensor.view<float>()));
  });
}

whale_rt_status
whale_rt_attention_grad(whale_rt_context *ctx, whale_rt_tensor *q,
                        whale_rt_tensor *k, whale_rt_tensor *v,
                        whale_rt_tensor *out, whale_rt_tensor *dout,
                        double scale, int32_t form, whale_rt_tensor *dq,
                        whale_rt_tensor *dk, whale_rt_tensor *dv) {
  return traced(ctx, "attention_grad", {dq, dk, dv}, [&]() -> whale_rt_status {
    // The forward's operands and output all f32, or all bf16 (amp's
    // storage); dout and the gradients f32 either way.
    bool bf16;
    if (whale_rt_status s =
            matmulTypes(ctx, "attention_grad",
                        {{"q", q}, {"k", k}, {"v", v}, {"out", out}}, {}, bf16))
      return s;
    if (whale_rt_status s =
            needF32(ctx, "attention_grad",
                    {{"dout", dout}, {"dq", dq}, {"dk", dk}, {"dv", dv}}))
      return s;
    if (shapeOf(k) != shapeOf(v) || shapeOf(out) != shapeOf(q) ||
        shapeOf(dout) != shapeOf(q) || shapeOf(dq) != shapeOf(q) ||
        shapeOf(dk) != shapeOf(k) || shapeOf(dv) != shapeOf(v))
      return ctx->invalid("attention_grad: the shapes do not fit q " +
                          shapeString(shapeOf(q)));
    AttentionForm f;
    if (whale_rt_status s = attentionForm(ctx, "attention_grad", form, f))
      return s;
    if (bf16)
      return ran(ctx,
                 ctx->device->attentionBackwardBf16(
                     q->tensor.cview<uint16_t>(), k->tensor.cview<uint16_t>(),
                     v->tensor.cview<uint16_t>(), out->tensor.cview<uint16_t>(),
                     dout->tensor.cview<float>(), scale, f,
                     dq->tensor.view<float>(), dk->tensor.view<float>(),
                     dv->tensor.view<float>()));
    return ran(ctx, ctx->device->attentionBackward(
                        q->tensor.cview<float>(), k->tensor.cview<float>(),
                        v->tensor.cview<float>(), out->tensor.cview<float>(),
                        dout->tensor.cview<float>(), scale, f,
                        dq->tensor.view<float>(), dk->tensor.view<float>(),
                        dv->tensor.view<float>()));
  });
}

whale_rt_status whale_rt_softmax_grad(whale_rt_context *ctx, whale_rt_tensor *y,
                                      whale_rt_tensor *dy, int64_t axis,
                                      whale_rt_tensor *dx) {
  return traced(ctx, "softmax_grad", {dx}, [&]() -> whale_rt_status {
    if (whale_rt_status s =
            needF32(ctx, "softmax_grad", {{"y", y}, {"dy", dy}, {"dx", dx}}))
      return s;
    int64_t rank = static_cast<int64_t>(shapeOf(y).size());
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank || shapeOf(dy) != shapeOf(y) ||
        shapeOf(dx) != shapeOf(y))
      return ctx->invalid("softmax_grad: shapes or axis do not fit " +
                          shapeString(shapeOf(y)));
    return ran(ctx, ctx->device->softmaxBackward(y->tensor.cview<float>(),
                                                 dy->tensor.cview<float>(), a,
                                                 dx->tensor.view<float>()));
  });
}

whale_rt_status whale_rt_causal_mask_grad(whale_rt_context *ctx,
                                          whale_rt_tensor *dy,
                                          whale_rt_tensor *dx) {
  return traced(ctx, "causal_mask_grad", {dx}, [&]() -> whale_rt_status {
    if (whale_rt_status s =
            needF32(ctx, "causal_mask_grad", {{"dy", dy}, {"dx", dx}}))
      return s;
    if (shapeOf(dy).size() < 2 || shapeOf(dx) != shapeOf(dy))
      return ctx->invalid(
          "causal_mask_grad: needs two tensors of one shape, rank >= 2");
    return ran(ctx, ctx->device->causalMaskBackward(dy->tensor.cview<float>(),
                                                    dx->tensor.view<float>()));
  });
}

whale_rt_status
whale_rt_layernorm_grad(whale_rt_context *ctx, whale_rt_tensor *x,
                        whale_rt_tensor *gamma, double eps, whale_rt_tensor *dy,
                        whale_rt_tensor *dx, whale_rt_tensor *dgamma,
                        whale_rt_tensor *dbeta) {
  return layerNormGrad(ctx, x, gamma, eps, dy, nullptr, dx, dgamma, dbeta);
}

whale_rt_status whale_rt_layernorm_grad_residual(
    whale_rt_context *ctx, whale_rt_tensor *x, whale_rt_tensor *gamma,
    double eps, whale_rt_tensor *dy, whale_rt_tensor *residual,
    whale_rt_tensor *dx, whale_rt_tensor *dgamma, whale_rt_tensor *dbeta) {
  if (!residual)
    return guarded(ctx, [&]() -> whale_rt_status {
      return ctx->invalid("layernorm_grad: 'residual' is null");
    });
  return layerNormGrad(ctx, x, gamma, eps, dy, residual, dx, dgamma, dbeta);
}

namespace {
/// rms_norm_grad, with the residual's gradient added to dx where given.
whale_rt_status rmsNormGrad(whale_rt_context *ctx, whale_rt_tensor *x,
                            whale_rt_tensor *weight, double eps,
                            whale_rt_tensor *dy, whale_rt_tensor *residual,
                            whale_rt_tensor *dx, whale_rt_tensor *dweight) {
  return traced(ctx, "rms_norm_grad", {dx, dweight}, [&]() -> whale_rt_status {
    if (whale_rt_status s = needF32(ctx, "rms_norm_grad",
                                    {{"x", x},
                                     {"weight", weight},
                                     {"dy", dy},
                                     {"dx", dx},
                                     {"dweight", dweight}}))
      return s;
    if (residual)
      if (whale_rt_status s =
              needF32(ctx, "rms_norm_grad", {{"residual", residual}}))
        return s;
    const Shape &sx = shapeOf(x);
    if (sx.empty() || shapeOf(weight) != Shape{sx.back()} ||
        shapeOf(dy) != sx || shapeOf(dx) != sx ||
        shapeOf(dweight) != shapeOf(weight) || !(eps > 0) ||
        (residual && shapeOf(residual) != sx))
      return ctx->invalid("rms_norm_grad: shapes do not fit " +
                          shapeString(sx));
    if (!residual)
      return ran(ctx,
                 ctx->device->rmsNormBackward(
                     x->tensor.cview<float>(), weight->tensor.cview<float>(),
                     eps, dy->tensor.cview<float>(), dx->tensor.view<float>(),
                     dweight->tensor.view<float>()));
    return ran(ctx,
               ctx->device->rmsNormBackwardResidual(
                   x->tensor.cview<float>(), weight->tensor.cview<float>(), eps,
                   dy->tensor.cview<float>(), residual->tensor.cview<float>(),
                   dx->tensor.view<float>(), dweight->tensor.view<float>()));
  });
}
} // namespace

whale_rt_status whale_rt_rms_norm_grad(whale_rt_context *ctx,
                                       whale_rt_tensor *x,
                                       whale_rt_tensor *weight, double eps,
                                       whale_rt_tensor *dy, whale_rt_tensor *dx,
                                       whale_rt_tensor *dweight) {
  return rmsNormGrad(ctx, x, weight, eps, dy, nullptr, dx, dweight);
}

whale_rt_status
whale_rt_rms_norm_grad_residual(whale_rt_context *ctx, whale_rt_tensor *x,
                                whale_rt_tensor *weight, double eps,
                                whale_rt_tensor *dy, whale_rt_tensor *residual,
                                whale_rt_tensor *dx, whale_rt_tensor *dweight) {
  if (!residual)
    return guarded(ctx, [&]() -> whale_rt_status {
      return ctx->invalid("rms_norm_grad: 'residual' is null");
    });
  return rmsNormGrad(ctx, x, weight, eps, dy, residual, dx, dweight);
}

whale_rt_status whale_rt_embedding_grad(whale_rt_context *ctx,
                                        whale_rt_tensor *ids,
                                        whale_rt_tensor *dout,
                                        whale_rt_tensor *dtable) {
  return traced(ctx, "embedding_grad", {dtable}, [&]() -> whale_rt_status {
    if (whale_rt_status s = needF32(ctx, "embedding_grad",
                                    {{"dout", dout}, {"dtable", dtable}}))
      return s;
    if (!isIndex(ids) || shapeOf(dtable).size() != 2)
      return ctx->invalid(
          "embedding_grad: needs integer ids and a [vocab, dim] gradient");
    Shape want = shapeOf(ids);
    want.push_back(shapeOf(dtable)[1]);
    if (shapeOf(dout) != want)
      return ctx->invalid("embedding_grad: dout is " +
                          shapeString(shapeOf(dout)) + ", expected " +
                          shapeString(want));
    return ran(ctx, ctx->device->embeddingBackward(
                        indexView(ids), dout->tensor.cview<float>(),
                        dtable->tensor.view<float>()));
  });
}

whale_rt_status whale_rt_cross_entropy_grad(whale_rt_context *ctx,
                                            whale_rt_tensor *logits,
                                            whale_rt_tensor *labels,
                                            whale_rt_tensor *dloss,
                                            whale_rt_tensor *dlogits) {
  return traced(ctx, "cross_entropy_grad", {dlogits}, [&]() -> whale_rt_status {
    // The logits f32, or bf16 (amp's storage); dloss and dlogits f32.
    const bool bf16 = logits && logits->tensor.dtype() == DType::BF16;
    if (whale_rt_status s =
            bf16 ? needF32(ctx, "cross_entropy_grad",
                           {{"dloss", dloss}, {"dlogits", dlogits}})
                 : needF32(ctx, "cross_entropy_grad",
                           {{"logits", logits},
                            {"dloss", dloss},
                            {"dlogits", dlogits}}))
      return s;
    const Shape &sl = shapeOf(logits);
    if (!isIndex(labels) || sl.empty() ||
        Shape(sl.begin(), sl.end() - 1) != shapeOf(labels) ||
        shapeOf(dloss) != shapeOf(labels) || shapeOf(dlogits) != sl)
      return ctx->invalid("cross_entropy_grad: shapes do not fit " +
                          shapeString(sl));
    if (bf16)
      return ran(ctx, ctx->device->crossEntropyBackwardBf16(
                          logits->tensor.cview<uint16_t>(), indexView(labels),
                          dloss->tensor.cview<float>(),
                          dlogits->tensor.view<float>()));
    return ran(ctx, ctx->device->crossEntropyBackward(
                        logits->tensor.cview<float>(), indexView(labels),
                        dloss->tensor.cview<float>(),
                        dlogits->tensor.view<float>()));
  });
}

whale_rt_status whale_rt_cross_entropy_grad_rounded(
    whale_rt_context *ctx, whale_rt_tensor *logits, whale_rt_tensor *labels,
    whale_rt_tensor *dloss, whale_rt_tensor *rounded, whale_rt_tensor *sum) {
  const char *op = "cross_entropy_grad_rounded";
  return traced(ctx, op, {rounded, sum}, [&]() -> whale_rt_status {
    if (!logits || !rounded)
      return ctx->invalid(std::string(op) + ": '" +
                          (logits ? "rounded" : "logits") + "' is null");
    const DType type = logits->tensor.dtype();
    if (type != DType::F32 && type != DType::BF16)
      return ctx->invalid(std::string(op) + ": 'logits' is " + dtypeName(type) +
                          ", expected f32 or bf16");
    if (whale_rt_status s = needF32(ctx, op, {{"dloss", dloss}, {"sum", sum}}))
      return s;
    if (rounded->tensor.dtype() != DType::BF16)
      return ctx->invalid(std::string(op) + ": 'rounded' is " +
                          dtypeName(rounded->tensor.dtype()) +
                          ", expected bf16");
    const Shape &sl = shapeOf(logits), &ss = shapeOf(sum);
    if (!isIndex(labels) || sl.size() < 2 ||
        Shape(sl.begin(), sl.end() - 1) != shapeOf(labels) ||
        shapeOf(dloss) != shapeOf(labels) || shapeOf(rounded) != sl ||
        ss.empty() || ss.size() >= sl.size() ||
        !std::equal(ss.begin(), ss.end(), sl.end() - ss.size()))
      return ctx->invalid(std::string(op) + ": shapes do not fit " +
                          shapeString(sl) + " (the sum " + shapeString(ss) +
                          ")");
    return ran(ctx, ctx->device->crossEntropyBackwardRounded(
                        MixedIn{logits->tensor.raw(), type, sl},
                        indexView(labels), dloss->tensor.cview<float>(),
                        rounded->tensor.view<uint16_t>(),
                        sum->tensor.view<float>()));
  });
}

whale_rt_status whale_rt_reduce_grad(whale_rt_context *ctx, int32_t op,
                                     whale_rt_tensor *x, int32_t num_axes,
                                     const int64_t *axes, whale_rt_tensor *dout,
                                     whale_rt_tensor *dx) {
  return traced(ctx, "reduce_grad", {dx}, [&]() -> whale_rt_status {
    if (whale_rt_status s =
            needF32(ctx, "reduce_grad", {{"x", x}, {"dout", dout}, {"dx", dx}}))
      return s;
    const Shape &sx = shapeOf(x);
    std::vector<int64_t> ax(axes, axes + std::max(0, num_axes));
    int64_t kept = x->tensor.numel();
    for (size_t i = 0; i < ax.size(); ++i) {
      if (ax[i] < 0 || ax[i] >= static_cast<int64_t>(sx.size()) ||
          (i && ax[i] <= ax[i - 1]))
        return ctx->invalid(
            "reduce_grad: axes must be sorted, distinct and in range");
      kept = sx[ax[i]] ? kept / sx[ax[i]] : 0;
    }
    if (op < WHALE_RT_SUM || op > WHALE_RT_MAX || shapeOf(dx) != sx ||
        dout->tensor.numel() != kept)
      return ctx->invalid("reduce_grad: shapes do not fit " + shapeString(sx));
    return ran(ctx, ctx->device->reduceBackward(
                        static_cast<ReduceOp>(op), x->tensor.cview<float>(), ax,
                        dout->tensor.cview<float>(), dx->tensor.view<float>()));
  });
}

whale_rt_status whale_rt_slice_grad(whale_rt_context *ctx,
                                    whale_rt_tensor *dout, int64_t axis,
                                    int64_t start, whale_rt_tensor *dx) {
  return traced(ctx, "slice_grad", {dx}, [&]() -> whale_rt_status {
    if (whale_rt_status s =
            needF32(ctx, "slice_grad", {{"dout", dout}, {"dx", dx}}))
      return s;
    const Shape &so = shapeOf(dout), &sx = shapeOf(dx);
    bool fits = so.size() == sx.size() && axis >= 0 &&
                axis < static_cast<int64_t>(sx.size()) && start >= 0 &&
                start + so[axis] <= sx[axis];
    for (size_t d = 0; fits && d < sx.size(); ++d)
      fits = static_cast<int64_t>(d) == axis || so[d] == sx[d];
    if (!fits)
      return ctx->invalid("slice_grad: " + shapeString(so) + " at " +
                          std::to_string(start) + " of axis " +
                          std::to_string(axis) + " does not fit " +
                          shapeString(sx));
    return ran(ctx,
               ctx->device->sliceBackward(dout->tensor.cview<float>(), axis,
                                          start, dx->tensor.view<float>()));
  });
}

whale_rt_status whale_rt_sgd_update(whale_rt_context *ctx,
                                    whale_rt_tensor *param,
                                    whale_rt_tensor *grad, double lr,
                                    double momentum, double weight_decay) {
  return sgdUpdate(ctx, param, grad, SgdParams{lr, momentum, weight_decay});
}

whale_rt_status whale_rt_adam_update(whale_rt_context *ctx,
                                     whale_rt_tensor *param,
                                     whale_rt_tensor *grad, int64_t step,
                                     double lr, double beta1, double beta2,
                                     double eps, double weight_decay,
                                     int32_t decoupled) {
  return adamUpdate(
      ctx, param, grad,
      AdamParams{step, lr, beta1, beta2, eps, weight_decay, decoupled != 0});
}

whale_rt_status whale_rt_set_train_state(whale_rt_context *ctx, int64_t step,
                                         double lr_scale) {
  return guarded(ctx, [&]() -> whale_rt_status {
    if (step < 1 || !(lr_scale >= 0))
      return ctx->invalid("set_train_state: needs step >= 1 and lr_scale >= 0");
    ctx->step = step;
    ctx->lrScale = lr_scale;
    ctx->training = true;
    forgetStarted(ctx);
    return WHALE_RT_OK;
  });
}

whale_rt_status whale_rt_set_rows(whale_rt_context *ctx, int64_t first_row,
                                  int32_t training) {
  return guarded(ctx, [&]() -> whale_rt_status {
    if (first_row < 0)
      return ctx->invalid("set_rows: the first row must be >= 0");
    ctx->firstRow = first_row;
    ctx->training = training != 0;
    return WHALE_RT_OK;
  });
}

whale_rt_status whale_rt_dropout(whale_rt_context *ctx, whale_rt_tensor *x,
                                 double rate, int64_t key, int64_t row_offset,
                                 whale_rt_tensor *y) {
  return traced(ctx, "dropout", {y}, [&]() -> whale_rt_status {
    if (whale_rt_status s = needF32(ctx, "dropout", {{"x", x}, {"y", y}}))
      return s;
    if (whale_rt_status s = needShape(ctx, "dropout", y, shapeOf(x)))
      return s;
    if (shapeOf(x).empty() || !(rate >= 0 && rate < 1) || row_offset < 0)
      return ctx->invalid("dropout: needs rows in dimension 0, a rate in "
                          "[0, 1) and a row offset >= 0");
    // Evaluating (or a rate of 0): the identity, a copy with no draws.
    if (!ctx->training || rate == 0)
      return ran(ctx, ctx->device->copy(y->tensor.raw(), x->tensor.raw(),
                                        x->tensor.bytes()));
    DropoutDraw draw = DropoutDraw::make(ctx->seed, ctx->step, key, rate);
    return ran(ctx, ctx->device->dropout(
                        x->tensor.cview<float>(), draw,
                        ctx->firstRow + row_offset,
                        static_cast<float>(1.0 / (1.0 - rate)),
                        y->tensor.view<float>()));
  });
}

whale_rt_status whale_rt_sgd_step(whale_rt_context *ctx, whale_rt_tensor *param,
                                  whale_rt_tensor *grad, double base_lr,
                                  double momentum, double weight_decay) {
  if (!ctx)
    return WHALE_RT_INVALID_ARGUMENT;
  return sgdUpdate(ctx, param, grad,
                   scheduled(ctx, SgdParams{base_lr, momentum, weight_decay}));
}

whale_rt_status whale_rt_adam_step(whale_rt_context *ctx,
                                   whale_rt_tensor *param,
                                   whale_rt_tensor *grad, double base_lr,
                                   double beta1, double beta2, double eps,
                                   double weight_decay, int32_t decoupled) {
  if (!ctx)
    return WHALE_RT_INVALID_ARGUMENT;
  return adamUpdate(
      ctx, param, grad,
      scheduled(ctx, AdamParams{ctx->step, base_lr, beta1, beta2, eps,
                                weight_decay, decoupled != 0}));
}

whale_rt_status whale_rt_adam_steps(whale_rt_context *ctx, int32_t num_params,
                                    whale_rt_tensor *const *params,
                                    whale_rt_tensor *const *grads,
                                    double base_lr, double beta1, double beta2,
                                    double eps, double weight_decay,
                                    int32_t decoupled) {
  if (!ctx)
    return WHALE_RT_INVALID_ARGUMENT;
  if (num_params < 0 || (num_params > 0 && (!params || !grads)))
    return guarded(ctx, [&]() -> whale_rt_status {
      return ctx->invalid("adam_steps: needs parameters and their gradients");
    });
  return traced(
      ctx, "adam_update", params, num_params, [&]() -> whale_rt_status {
        const AdamParams p =
            scheduled(ctx, AdamParams{ctx->step, base_lr, beta1, beta2, eps,
                                      weight_decay, decoupled != 0});
        if (!adamValid(p))
          return ctx->invalid("adam_steps: needs lr >= 0, betas in [0, 1), "
                              "eps > 0, weight_decay >= 0");
        // All checked before any is updated; a parameter twice would be
        // updated twice one by one but raced in one launch.
        std::vector<Device::AdamSlot> slots(num_params);
        std::set<const void *> seen;
        for (int32_t i = 0; i < num_params; ++i) {
          // The message is made only for a parameter that fails.
          auto at = [i] {
            return "adam_steps: parameter " + std::to_string(i);
          };
          whale_rt_tensor *w = params[i], *g = grads[i];
          if (!w || !g || w->tensor.dtype() != DType::F32 ||
              g->tensor.dtype() != DType::F32)
            return needF32(ctx, at().c_str(), {{"param", w}, {"grad", g}});
          if (shapeOf(g) != shapeOf(w))
            return ctx->invalid(at() + ": the gradient is " +
                                shapeString(shapeOf(g)) + ", the parameter " +
                                shapeString(shapeOf(w)));
          if (w->tensor.numel() > 0 && !seen.insert(w->tensor.raw()).second)
            return ctx->invalid(at() + " is listed twice");
          if (whale_rt_status s = adamSlot(ctx, w, g, slots[i]))
            return s;
        }
        return ran(ctx, ctx->device->adamSteps(slots, p));
      });
}

whale_rt_status whale_rt_optimizer_state(whale_rt_context *ctx,
                                         whale_rt_tensor *param, int32_t index,
                                         whale_rt_tensor **out) {
  return guarded(ctx, [&]() -> whale_rt_status {
    if (!param || !out || index < 0 || index > 1 ||
        param->tensor.dtype() != DType::F32)
      return ctx->invalid(
          "optimizer_state: needs an f32 parameter and index 0 or 1");
    std::vector<std::unique_ptr<whale_rt_tensor>> *state;
    if (whale_rt_status s = optimizerState(ctx, param, index + 1, state))
      return s;
    *out = (*state)[index].get();
    return WHALE_RT_OK;
  });
}

whale_rt_status whale_rt_clip_grad_norm(whale_rt_context *ctx,
                                        int32_t num_grads,
                                        whale_rt_tensor *const *grads,
                                        double max_norm, double *norm) {
  return guarded(ctx, [&]() -> whale_rt_status {
    if (num_grads < 0 || (num_grads > 0 && !grads) || !(max_norm > 0))
      return ctx->invalid("clip_grad_norm: needs gradients and max_norm > 0");
    return clipCombined(ctx, num_grads, grads, max_norm, norm, nullptr);
  });
}

} // extern "C"
