//===- CApiConv.cpp - the C ABI's convolutions and pooling ----------------===//

#include "runtime/capi/CApiInternal.h"

using namespace whale::rt;
using namespace whale::rt::capi;

namespace {

/// A convolution's window from the C ABI's {strideH, strideW, padH, padW,
/// dilationH, dilationW, groups} and its weights, after checking that x
/// [N, C, H, W] and w [O, C / groups, KH, KW] fit and give at least one
/// output position; the output's shape in `y`.
whale_rt_status convWindow(whale_rt_context *ctx, const char *op,
                           whale_rt_tensor *x, whale_rt_tensor *w,
                           const int64_t *geometry, Window2d &win,
                           int64_t &groups, Shape &y) {
  if (!geometry)
    return ctx->invalid(std::string(op) + ": no window given");
  const Shape &sx = shapeOf(x), &sw = shapeOf(w);
  win.strideH = geometry[0];
  win.strideW = geometry[1];
  win.padH = geometry[2];
  win.padW = geometry[3];
  win.dilationH = geometry[4];
  win.dilationW = geometry[5];
  groups = geometry[6];
  if (sx.size() != 4 || sw.size() != 4)
    return ctx->invalid(std::string(op) + ": x " + shapeString(sx) +
                        " and w " + shapeString(sw) + " must both be 4-D");
  if (win.strideH < 1 || win.strideW < 1 || win.padH < 0 || win.padW < 0 ||
      win.dilationH < 1 || win.dilationW < 1 || groups < 1)
    return ctx->invalid(std::string(op) +
                        ": strides, dilations and groups must be >= 1 and "
                        "padding >= 0");
  if (sx[1] % groups != 0 || sw[0] % groups != 0 || sw[1] != sx[1] / groups)
    return ctx->invalid(std::string(op) + ": w " + shapeString(sw) +
                        " does not fit x " + shapeString(sx) + " in " +
                        std::to_string(groups) + " groups");
  win.kernelH = sw[2];
  win.kernelW = sw[3];
  y = {sx[0], sw[0], win.outH(sx[2]), win.outW(sx[3])};
  if (y[2] < 1 || y[3] < 1)
    return ctx->invalid(std::string(op) + ": the kernel " + shapeString(sw) +
                        " does not fit the padded input " + shapeString(sx));
  return WHALE_RT_OK;
}

/// A pooling's window from {kernelH, kernelW, strideH, strideW, padH, padW}
/// over x [..., H, W]; the output's shape in `y`.
whale_rt_status poolWindow(whale_rt_context *ctx, const char *op,
                           whale_rt_tensor *x, const int64_t *geometry,
                           Window2d &win, Shape &y) {
  if (!geometry)
    return ctx->invalid(std::string(op) + ": no window given");
  const Shape &sx = shapeOf(x);
  win.kernelH = geometry[0];
  win.kernelW = geometry[1];
  win.strideH = geometry[2];
  win.strideW = geometry[3];
  win.padH = geometry[4];
  win.padW = geometry[5];
  if (sx.size() < 2 || win.kernelH < 1 || win.kernelW < 1 ||
      win.strideH < 1 || win.strideW < 1 || win.padH < 0 || win.padW < 0 ||
      win.padH * 2 > win.kernelH || win.padW * 2 > win.kernelW)
    return ctx->invalid(std::string(op) +
                        ": needs rank >= 2, kernel and stride >= 1, and "
                        "padding from 0 to half the kernel");
  y = sx;
  y[y.size() - 2] = win.outH(sx[sx.size() - 2]);
  y[y.size() - 1] = win.outW(sx[sx.size() - 1]);
  if (y[y.size() - 2] < 1 || y[y.size() - 1] < 1)
    return ctx->invalid(std::string(op) + ": the window does not fit " +
                        shapeString(sx));
  return WHALE_RT_OK;
}

} // namespace

extern "C" {

whale_rt_status whale_rt_conv2d(whale_rt_context *ctx, whale_rt_tensor *x,
                                whale_rt_tensor *w, const int64_t *geometry,
                                whale_rt_tensor *out) {
  return traced(ctx, "conv2d", {out}, [&]() -> whale_rt_status {
    if (whale_rt_status s =
            needF32(ctx, "conv2d", {{"x", x}, {"w", w}, {"out", out}}))
      return s;
    Window2d win;
    int64_t groups = 1;
    Shape y;
    if (whale_rt_status s =
            convWindow(ctx, "conv2d", x, w, geometry, win, groups, y))
      return s;
    if (whale_rt_status s = needShape(ctx, "conv2d", out, y))
      return s;
    return ran(ctx, ctx->device->conv2d(x->tensor.cview<float>(),
                                        w->tensor.cview<float>(), win, groups,
                                        out->tensor.view<float>()));
  });
}

whale_rt_status whale_rt_conv2d_grad(whale_rt_context *ctx, whale_rt_tensor *x,
                                     whale_rt_tensor *w, whale_rt_tensor *dy,
                                     const int64_t *geometry,
                                     whale_rt_tensor *dx, whale_rt_tensor *dw) {
  return traced(ctx, "conv2d_grad", {dx, dw}, [&]() -> whale_rt_status {
    if (whale_rt_status s =
            needF32(ctx, "conv2d_grad", {{"x", x}, {"w", w}, {"dy", dy}}))
      return s;
    // A gradient nobody reads (an image's, at the network's first
    // convolution) is left out: null.
    if (!dx && !dw)
      return ctx->invalid("conv2d_grad: 'dx' and 'dw' are both null");
    for (auto [name, t] : {std::pair{"dx", dx}, std::pair{"dw", dw}})
      if (t && t->tensor.dtype() != DType::F32)
        return ctx->invalid(std::string("conv2d_grad: '") + name + "' is " +
                            dtypeName(t->tensor.dtype()) + ", expected f32");
    Window2d win;
    int64_t groups = 1;
    Shape y;
    if (whale_rt_status s =
            convWindow(ctx, "conv2d_grad", x, w, geometry, win, groups, y))
      return s;
    if (shapeOf(dy) != y || (dx && shapeOf(dx) != shapeOf(x)) ||
        (dw && shapeOf(dw) != shapeOf(w)))
      return ctx->invalid("conv2d_grad: dy must be " + shapeString(y) +
                          ", dx and dw the shapes of x and w");
    View<float> vdx, vdw;
    if (dx)
      vdx = dx->tensor.view<float>();
    if (dw)
      vdw = dw->tensor.view<float>();
    return ran(ctx, ctx->device->conv2dBackward(
                        x->tensor.cview<float>(), w->tensor.cview<float>(),
                        dy->tensor.cview<float>(), win, groups,
                        dx ? &vdx : nullptr, dw ? &vdw : nullptr));
  });
}

whale_rt_status whale_rt_pool2d(whale_rt_context *ctx, int32_t kind,
                                whale_rt_tensor *x, const int64_t *geometry,
                                whale_rt_tensor *out) {
  return traced(ctx, "pool2d", {out}, [&]() -> whale_rt_status {
    if (whale_rt_status s = needF32(ctx, "pool2d", {{"x", x}, {"out", out}}))
      return s;
    if (kind != WHALE_RT_POOL_MAX && kind != WHALE_RT_POOL_AVG)
      return ctx->invalid("pool2d: unknown kind " + std::to_string(kind));
    Window2d win;
    Shape y;
    if (whale_rt_status s = poolWindow(ctx, "pool2d", x, geometry, win, y))
      return s;
    if (whale_rt_status s = needShape(ctx, "pool2d", out, y))
      return s;
    return ran(ctx, ctx->device->pool2d(kind == WHALE_RT_POOL_MAX,
                                        x->tensor.cview<float>(), win,
                                        out->tensor.view<float>()));
  });
}

whale_rt_status whale_rt_pool2d_grad(whale_rt_context *ctx, int32_t kind,
                                     whale_rt_tensor *x, whale_rt_tensor *dy,
                                     const int64_t *geometry,
                                     whale_rt_tensor *dx) {
  return traced(ctx, "pool2d_grad", {dx}, [&]() -> whale_rt_status {
    if (whale_rt_status s =
            needF32(ctx, "pool2d_grad", {{"x", x}, {"dy", dy}, {"dx", dx}}))
      return s;
    if (kind != WHALE_RT_POOL_MAX && kind != WHALE_RT_POOL_AVG)
      return ctx->invalid("pool2d_grad: unknown kind " + std::to_string(kind));
    Window2d win;
    Shape y;
    if (whale_rt_status s =
            poolWindow(ctx, "pool2d_grad", x, geometry, win, y))
      return s;
    if (shapeOf(dy) != y || shapeOf(dx) != shapeOf(x))
      return ctx->invalid("pool2d_grad: dy must be " + shapeString(y) +
                          " and dx the shape of x");
    return ran(ctx, ctx->device->pool2dBackward(
                        kind == WHALE_RT_POOL_MAX, x->tensor.cview<float>(),
                        dy->tensor.cview<float>(), win,
                        dx->tensor.view<float>()));
  });
}

} // extern "C"
