//===- PrefetchParams.cpp - -whale-prefetch-params ------------------------===//
//
// Overlaps ZeRO stage 3's gathers with compute. Each `whale.gather_params`
// of a rank program becomes a `whale.gather_params_start`, issued where
// the gather before it stood (so the bucket travels on the rank's
// collective thread while the layer before computes), and a
// `whale.gather_params_wait` where the gather stood, before its first
// reader. The first gather has nothing before it and starts in place.
//
// The start packs only the owner's part of the bucket into host memory;
// the gathered tensors are made at the wait, so prefetching holds no more
// device memory than gathering in place. The collectives of one rank run
// in the order it starts them, the same on every member (the ranks of a
// group run the same program), as the gradient buckets' do.
//
// Off where the gradient sums are (grad_sync = "after_backward", whale run
// --no-overlap): the gathers then block where they stand.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"

#include "dialects/Whale/IR/TrainAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace whale {
#define GEN_PASS_DEF_WHALEPREFETCHPARAMS
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

void prefetch(func::FuncOp fn) {
  Block &body = fn.getBody().front();
  SmallVector<GatherParamsOp> gathers(body.getOps<GatherParamsOp>());
  OpBuilder b(fn.getContext());
  // Where the next gather starts: before the wait of the one before it.
  Operation *lead = nullptr;
  for (GatherParamsOp g : gathers) {
    b.setInsertionPoint(lead ? lead : g.getOperation());
    auto start = GatherParamsStartOp::create(
        b, g.getLoc(), g.getParams(), g.getOwnersAttr(), g.getGroupAttr(),
        g.getShardsAttr(), g.getBf16Attr());
    b.setInsertionPoint(g);
    auto wait = GatherParamsWaitOp::create(b, g.getLoc(), g.getResultTypes(),
                                           start.getPending());
    g.replaceAllUsesWith(wait.getResults());
    g.erase();
    lead = wait;
  }
}

struct PrefetchParamsPass
    : public whale::impl::WhalePrefetchParamsBase<PrefetchParamsPass> {
  void runOnOperation() override {
    if (!settingsOf(getOperation()).overlapGradSync())
      return;
    for (func::FuncOp fn : getOperation().getOps<func::FuncOp>())
      if (fn->hasAttr("whale.rank") && !fn.getBody().empty())
        prefetch(fn);
  }
};

} // namespace
