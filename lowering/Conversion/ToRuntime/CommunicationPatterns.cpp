//===- CommunicationPatterns.cpp - Collectives and transfers --------------===//
//
// Peers by stage and groups by kind, which the runtime resolves from where
// the context sits in the plan; tensor parallelism's collectives know the
// rank's part the same way. A reduction writes its sums into its operands'
// tensors, so its results are those tensors.
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/Conversion/ToRuntime/RuntimePatterns.h"

using namespace mlir;
using namespace whale;

namespace {

Handles lowerAllReduce(AllReduceOp ar, ValueRange in, RuntimeCalls &rt) {
  int32_t n = ar.getValues().size();
  Value array = rt.handleArray(in);
  std::optional<int64_t> shards = ar.getShards();
  if (std::optional<ArrayRef<int64_t>> owners = ar.getOwners())
    rt.call(WHALE_RT_FN(reduce_to_owners),
            {rt.ctx, rt.groupOf(shards, ar.getGroup()),
             rt.i32(shards.value_or(0)), rt.i32(n), array,
             rt.i32ArrayOf(*owners)});
  else if (ar.getGroup() == "shard_peers")
    rt.call(WHALE_RT_FN(all_reduce_peers),
            {rt.ctx, rt.i32(*shards), rt.i32(n), array});
  else
    rt.call(WHALE_RT_FN(all_reduce),
            {rt.ctx, rt.i32(RuntimeCalls::groupKind(ar.getGroup())), rt.i32(n),
             array});
  return Handles(in.begin(), in.end());
}

/// A micro-batch's reduced gradients added into their owners' running
/// sums, in place: the results are the sums' tensors.
Handles lowerAddIntoOwners(AddIntoOwnersOp r, ValueRange in, RuntimeCalls &rt) {
  const size_t n = r.getGrads().size();
  std::optional<int64_t> shards = r.getShards();
  rt.call(WHALE_RT_FN(add_into_owners),
          {rt.ctx, rt.groupOf(shards, r.getGroup()), rt.i32(shards.value_or(0)),
           rt.i32(static_cast<int32_t>(n)), rt.handleArray(in.take_front(n)),
           rt.handleArray(in.drop_front(n)), rt.i32ArrayOf(r.getOwners())});
  return Handles(in.begin() + n, in.end());
}

/// A started reduction's result is its request, waited for later.
Handles lowerAllReduceStart(AllReduceStartOp start, ValueRange in,
                            RuntimeCalls &rt) {
  Value request = rt.requestSlot();
  std::optional<int64_t> shards = start.getShards();
  SmallVector<Value> args = {
      rt.ctx, rt.groupOf(shards, start.getGroup()), rt.i32(shards.value_or(0)),
      rt.i32(static_cast<int32_t>(start.getValues().size())),
      rt.handleArray(in)};
  if (std::optional<ArrayRef<int64_t>> owners = start.getOwners()) {
    args.append({rt.i32ArrayOf(*owners), request});
    rt.call(WHALE_RT_FN(reduce_to_owners_start), args);
  } else {
    args.push_back(request);
    rt.call(WHALE_RT_FN(all_reduce_start), args);
  }
  return {rt.requestIn(request)};
}

/// The sums are written into the tensors the start was given.
Handles lowerAllReduceWait(AllReduceWaitOp wait, ValueRange in,
                           RuntimeCalls &rt) {
  rt.call(WHALE_RT_FN(all_reduce_wait), {rt.ctx, in[0]});
  Handles sums;
  for (Value v : wait.getStart().getValues())
    sums.push_back(rt.handleOf(v));
  return sums;
}

} // namespace

void whale::populateCommunicationRuntimePatterns(
    RewritePatternSet &patterns, const RuntimeLowering &lowering) {
  auto &p = patterns;
  const RuntimeLowering &l = lowering;
  addRuntimePattern<AllReduceOp>(p, l, lowerAllReduce);
  addRuntimePattern<AllReduceStartOp>(p, l, lowerAllReduceStart);
  addRuntimePattern<AllReduceWaitOp>(p, l, lowerAllReduceWait);
  addRuntimePattern<AddIntoOwnersOp>(p, l, lowerAddIntoOwners);
  addRuntimePattern<SendOp>(
      p, l, [](SendOp s, ValueRange in, RuntimeCalls &rt) {
        rt.call(WHALE_RT_FN(send),
                {rt.ctx, rt.i32(s.getStage()), rt.i64(s.getTag()), in[0]});
        return Handles{};
      });
  addRuntimePattern<RecvOp>(p, l, [](RecvOp r, ValueRange, RuntimeCalls &rt) {
    Handles out = rt.tensorsFor(r);
    rt.call(WHALE_RT_FN(recv),
            {rt.ctx, rt.i32(r.getStage()), rt.i64(r.getTag()), out[0]});
    return out;
  });
  addRuntimePattern<AllGatherOp>(
      p, l, [](AllGatherOp g, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(g);
        rt.call(WHALE_RT_FN(all_gather),
                {rt.ctx, rt.i32(g.getShards()), rt.weights(g.getWeights()),
                 rt.i64(g.getAxis()), in[0], out[0]});
        return out;
      });
  addRuntimePattern<AllToAllOp>(
      p, l, [](AllToAllOp g, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(g);
        rt.call(WHALE_RT_FN(all_to_all),
                {rt.ctx, rt.i32(g.getShards()), rt.weights(g.getWeights()),
                 rt.i64(g.getSplitAxis()), rt.i64(g.getConcatAxis()), in[0],
                 out[0]});
        return out;
      });
  addRuntimePattern<ShardSliceOp>(
      p, l, [](ShardSliceOp g, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(g);
        if (std::optional<int64_t> parts = g.getParts())
          rt.call(WHALE_RT_FN(shard_slice_shared),
                  {rt.ctx, rt.i32(g.getShards()), rt.i32(*parts),
                   rt.i64(g.getAxis()), in[0], out[0]});
        else
          rt.call(WHALE_RT_FN(shard_slice),
                  {rt.ctx, rt.i32(g.getShards()), rt.weights(g.getWeights()),
                   rt.i64(g.getAxis()), in[0], out[0]});
        return out;
      });
  addRuntimePattern<ShardSumOp>(
      p, l, [](ShardSumOp g, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(g);
        rt.call(WHALE_RT_FN(shard_sum),
                {rt.ctx, rt.i32(g.getShards()), in[0], out[0]});
        return out;
      });
  // The value itself; its own buffer keeps the liveness rules simple.
  addRuntimePattern<FanoutOp>(
      p, l, [](FanoutOp f, ValueRange in, RuntimeCalls &rt) {
        return rt.callOnOperandsAndResults(f, in, WHALE_RT_FN(reshape));
      });
  addRuntimePattern<ShardedCrossEntropyOp>(
      p, l, [](ShardedCrossEntropyOp c, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(c);
        rt.call(WHALE_RT_FN(sharded_cross_entropy),
                {rt.ctx, rt.i32(c.getShards()), rt.weights(c.getWeights()),
                 in[0], in[1], out[0]});
        return out;
      });
  addRuntimePattern<ShardedCrossEntropyGradOp>(
      p, l, [](ShardedCrossEntropyGradOp c, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(c);
        rt.call(WHALE_RT_FN(sharded_cross_entropy_grad),
                {rt.ctx, rt.i32(c.getShards()), rt.weights(c.getWeights()),
                 in[0], in[1], in[2], out[0]});
        return out;
      });
}
