//===- OptimizerPatterns.cpp - Updates and clipping, which write in place -===//
//
// An update writes its parameter in place and has no result; clipping
// scales its gradients in place, so its results are its operands' tensors.
// With optimizer state sharded (ZeRO stage 1) an update runs on its
// parameter's owner only, and the owners broadcast the new values.
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/Conversion/ToRuntime/RuntimePatterns.h"

using namespace mlir;
using namespace whale;

namespace {

Handles lowerSgdUpdate(SgdUpdateOp u, ValueRange in, RuntimeCalls &rt) {
  rt.onOwner(u, [&] {
    rt.call(WHALE_RT_FN(sgd_step),
            {rt.ctx, in[0], in[1], rt.f64(u.getLr()), rt.f64(u.getMomentum()),
             rt.f64(u.getWeightDecay())});
  });
  return {};
}

/// The first update of a run (LoweringPlan) makes them all; the others
/// only release what they were the last to read.
Handles lowerAdamUpdate(AdamUpdateOp u, ValueRange, RuntimeCalls &rt) {
  ArrayRef<Operation *> run = rt.plan.adamRunAt(u);
  if (run.empty())
    return {};
  SmallVector<Value> hyper = {
      rt.f64(u.getLr()),  rt.f64(u.getBeta1()),       rt.f64(u.getBeta2()),
      rt.f64(u.getEps()), rt.f64(u.getWeightDecay()), rt.i32(u.getDecoupled())};
  // A run's updates by owner, in order of each owner's first update: those
  // of one owner are independent and run together, as one call (one launch
  // for many on a GPU).
  SmallVector<SmallVector<Operation *>> byOwner;
  SmallVector<Attribute> owners;
  for (Operation *op : run) {
    auto at = llvm::find(owners, op->getAttr("owner"));
    if (at == owners.end()) {
      owners.push_back(op->getAttr("owner"));
      byOwner.emplace_back();
      at = owners.end() - 1;
    }
    byOwner[at - owners.begin()].push_back(op);
  }
  for (ArrayRef<Operation *> mine : byOwner)
    rt.onOwner(mine.front(), [&] {
      SmallVector<Value> params, grads;
      for (Operation *m : mine) {
        params.push_back(rt.handleOf(m->getOperand(0)));
        grads.push_back(rt.handleOf(m->getOperand(1)));
      }
      if (mine.size() == 1) {
        SmallVector<Value> args = {rt.ctx, params[0], grads[0]};
        args.append(hyper);
        rt.call(WHALE_RT_FN(adam_step), args);
        return;
      }
      SmallVector<Value> args = {rt.ctx,
                                 rt.i32(static_cast<int32_t>(mine.size())),
                                 rt.handleArray(params), rt.handleArray(grads)};
      args.append(hyper);
      rt.call(WHALE_RT_FN(adam_steps), args);
    });
  return {};
}

Handles lowerBroadcast(BroadcastOp bc, ValueRange in, RuntimeCalls &rt) {
  std::optional<int64_t> shards = bc.getShards();
  rt.call(WHALE_RT_FN(broadcast_from_owners),
          {rt.ctx, rt.groupOf(shards, bc.getGroup()),
           rt.i32(shards.value_or(0)),
           rt.i32(static_cast<int32_t>(bc.getParams().size())),
           rt.handleArray(in), rt.i32ArrayOf(bc.getOwners())});
  return {};
}

/// The parameters a gather sends in bf16 (a flag each), or null: none.
Value bf16Flags(std::optional<ArrayRef<bool>> bf16, RuntimeCalls &rt) {
  return bf16 ? rt.i32ArrayOf(*bf16) : rt.null();
}

/// Every member gets new tensors of the parameters' values, which the
/// owners send.
Handles lowerGatherParams(GatherParamsOp g, ValueRange in, RuntimeCalls &rt) {
  Handles outs = rt.tensorsFor(g);
  std::optional<int64_t> shards = g.getShards();
  rt.call(WHALE_RT_FN(gather_params),
          {rt.ctx, rt.groupOf(shards, g.getGroup()), rt.i32(shards.value_or(0)),
           rt.i32(static_cast<int32_t>(g.getParams().size())),
           rt.handleArray(in), rt.i32ArrayOf(g.getOwners()),
           bf16Flags(g.getBf16(), rt), rt.handleArray(outs)});
  return outs;
}

/// A gather begun: its result is the request, its parameters' sizes are
/// the types' (the other members' handles have none).
Handles lowerGatherParamsStart(GatherParamsStartOp g, ValueRange in,
                               RuntimeCalls &rt) {
  Value request = rt.requestSlot();
  SmallVector<int64_t> counts;
  for (Value p : g.getParams())
    counts.push_back(cast<RankedTensorType>(p.getType()).getNumElements());
  std::optional<int64_t> shards = g.getShards();
  rt.call(WHALE_RT_FN(gather_params_start),
          {rt.ctx, rt.groupOf(shards, g.getGroup()), rt.i32(shards.value_or(0)),
           rt.i32(static_cast<int32_t>(counts.size())), rt.handleArray(in),
           rt.i64Array(counts), rt.i32ArrayOf(g.getOwners()),
           bf16Flags(g.getBf16(), rt), request});
  return {rt.requestIn(request)};
}

/// The gathered tensors are made here, where the bucket is complete.
Handles lowerGatherParamsWait(GatherParamsWaitOp wait, ValueRange in,
                              RuntimeCalls &rt) {
  Handles outs = rt.tensorsFor(wait);
  rt.call(WHALE_RT_FN(gather_params_wait),
          {rt.ctx, in[0], rt.i32(static_cast<int32_t>(outs.size())),
           rt.handleArray(outs)});
  return outs;
}

Handles lowerClipGradNorm(ClipGradNormOp c, ValueRange in, RuntimeCalls &rt) {
  int32_t n = c.getGrads().size();
  Value array = rt.handleArray(in);
  Value maxNorm = rt.f64(c.getMaxNorm());
  std::optional<StringRef> group = c.getGroup();
  auto groupKind = [&] {
    return rt.i32(group ? RuntimeCalls::groupKind(*group) : -1);
  };
  std::optional<ArrayRef<bool>> sharded = c.getSharded();
  if (std::optional<ArrayRef<int64_t>> owners = c.getOwners())
    rt.call(WHALE_RT_FN(clip_grad_norm_owned),
            {rt.ctx, groupKind(), rt.i32(c.getShards().value_or(0)),
             rt.i32(rt.sharding()), rt.i32(n), array,
             sharded ? rt.i32ArrayOf(*sharded) : rt.null(),
             rt.i32ArrayOf(*owners), maxNorm, rt.null()});
  else if (sharded)
    rt.call(WHALE_RT_FN(clip_grad_norm_sharded),
            {rt.ctx, groupKind(), rt.i32(*c.getShards()), rt.i32(n), array,
             rt.i32ArrayOf(*sharded), maxNorm, rt.null()});
  else if (group)
    rt.call(WHALE_RT_FN(clip_grad_norm_group),
            {rt.ctx, groupKind(), rt.i32(n), array, maxNorm, rt.null()});
  else
    rt.call(WHALE_RT_FN(clip_grad_norm),
            {rt.ctx, rt.i32(n), array, maxNorm, rt.null()});
  return Handles(in.begin(), in.begin() + n);
}

} // namespace

void whale::populateOptimizerRuntimePatterns(RewritePatternSet &patterns,
                                             const RuntimeLowering &lowering) {
  addRuntimePattern<SgdUpdateOp>(patterns, lowering, lowerSgdUpdate);
  addRuntimePattern<AdamUpdateOp>(patterns, lowering, lowerAdamUpdate);
  addRuntimePattern<BroadcastOp>(patterns, lowering, lowerBroadcast);
  addRuntimePattern<GatherParamsOp>(patterns, lowering, lowerGatherParams);
  addRuntimePattern<GatherParamsStartOp>(patterns, lowering,
                                         lowerGatherParamsStart);
  addRuntimePattern<GatherParamsWaitOp>(patterns, lowering,
                                        lowerGatherParamsWait);
  addRuntimePattern<ClipGradNormOp>(patterns, lowering, lowerClipGradNorm);
}
