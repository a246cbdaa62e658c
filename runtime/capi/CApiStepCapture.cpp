//===- CApiStepCapture.cpp - a train step held and replayed ---------------===//
//
// The C ABI over a device's StepCapture (runtime/core/StepCapture.h): the
// driver probes a step, captures the next and replays it after that
// (runtime/run/StepGraphs.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/capi/CApiInternal.h"

using namespace whale::rt;
using namespace whale::rt::capi;

namespace whale::rt::capi {

bool captureClear(whale_rt_context *ctx) {
  StepCapture *capture = ctx->device->stepCapture();
  return capture && capture->blocker().empty();
}

void noteCaptureOp(whale_rt_context *ctx, const char *op) {
  if (!captureClear(ctx))
    ctx->captureOp = op;
}

namespace {

/// The context's capture, or null with the reason as its last error.
StepCapture *captureOf(whale_rt_context *ctx) {
  StepCapture *capture = ctx->device->stepCapture();
  if (!capture) {
    ctx->invalid(ctx->device->name() +
                 " runs each op as it is called: it cannot hold a step");
    return nullptr;
  }
  if (ctx->profiler) {
    ctx->invalid("the step is traced, which times each op as it runs");
    return nullptr;
  }
  return capture;
}

} // namespace
} // namespace whale::rt::capi

extern "C" {

whale_rt_status whale_rt_step_capture_probe(whale_rt_context *ctx, int32_t on) {
  return guarded(ctx, [&]() -> whale_rt_status {
    StepCapture *capture = captureOf(ctx);
    if (!capture)
      return WHALE_RT_INVALID_ARGUMENT;
    if (on)
      ctx->captureOp.clear();
    capture->probe(on != 0);
    ctx->watchCapture = on != 0;
    return WHALE_RT_OK;
  });
}

const char *whale_rt_step_capture_blocker(whale_rt_context *ctx) {
  if (!ctx)
    return "";
  StepCapture *capture = ctx->device->stepCapture();
  ctx->captureWhy.clear();
  if (capture && !capture->blocker().empty())
    ctx->captureWhy = (ctx->captureOp.empty() ? "" : ctx->captureOp + ": ") +
                      capture->blocker();
  return ctx->captureWhy.c_str();
}

whale_rt_status whale_rt_step_capture_begin(whale_rt_context *ctx) {
  return guarded(ctx, [&]() -> whale_rt_status {
    StepCapture *capture = captureOf(ctx);
    if (!capture)
      return WHALE_RT_INVALID_ARGUMENT;
    ctx->captureOp.clear();
    if (Status st = capture->begin(); !st)
      return ctx->fail(st);
    ctx->watchCapture = true;
    ctx->captureOpen = true;
    ctx->beforeCapture.clear();
    for (const auto &[t, owned] : ctx->tensors)
      ctx->beforeCapture.insert(t);
    return WHALE_RT_OK;
  });
}

whale_rt_status whale_rt_step_capture_end(whale_rt_context *ctx,
                                          int64_t *held) {
  return guarded(ctx, [&]() -> whale_rt_status {
    StepCapture *capture = captureOf(ctx);
    if (!capture)
      return WHALE_RT_INVALID_ARGUMENT;
    ctx->watchCapture = false;
    CapturedStep step;
    if (Status st = capture->end(step); !st)
      return ctx->fail(st);
    ctx->captureOpen = false;
    ctx->beforeCapture.clear();
    if (held) {
      held[0] = step.operations;
      held[1] = step.kernels;
      held[2] = step.copies;
      held[3] = step.fills;
    }
    return WHALE_RT_OK;
  });
}

whale_rt_status whale_rt_step_replay(whale_rt_context *ctx) {
  return guarded(ctx, [&]() -> whale_rt_status {
    StepCapture *capture = captureOf(ctx);
    if (!capture)
      return WHALE_RT_INVALID_ARGUMENT;
    return ran(ctx, capture->replay(TrainState{ctx->step, ctx->lrScale}));
  });
}

void whale_rt_step_capture_drop(whale_rt_context *ctx) {
  if (!ctx)
    return;
  ctx->watchCapture = false;
  if (StepCapture *capture = ctx->device->stepCapture())
    capture->drop();
  if (!ctx->captureOpen)
    return;
  // An unfinished capture: its step's tensors were never run, and the
  // program that made them has returned.
  ctx->captureOpen = false;
  for (auto it = ctx->tensors.begin(); it != ctx->tensors.end();)
    it = ctx->beforeCapture.count(it->first) ? std::next(it)
                                             : ctx->tensors.erase(it);
  ctx->beforeCapture.clear();
}

} // extern "C"
