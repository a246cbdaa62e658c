//===- ComputePatterns.cpp - The forward computation's runtime calls ------===//
//
// Each op a new tensor for its result (static shapes are known) and one
// whale_rt_* call; the op's attributes become the call's constants.
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/Conversion/ToRuntime/OpAttributes.h"
#include "lowering/Conversion/ToRuntime/RuntimePatterns.h"

using namespace mlir;
using namespace whale;

namespace {

template <class OpTy, int32_t Kind>
Handles lowerBinary(OpTy op, ValueRange in, RuntimeCalls &rt) {
  Handles out = rt.tensorsFor(op);
  rt.call(WHALE_RT_FN(binary), {rt.ctx, rt.i32(Kind), in[0], in[1], out[0]});
  return out;
}

template <class OpTy, int32_t Kind>
Handles lowerUnary(OpTy op, ValueRange in, RuntimeCalls &rt) {
  Handles out = rt.tensorsFor(op);
  rt.call(WHALE_RT_FN(unary), {rt.ctx, rt.i32(Kind), in[0], out[0]});
  return out;
}

template <class OpTy, int32_t Kind>
Handles lowerReduce(OpTy op, ValueRange in, RuntimeCalls &rt) {
  Handles out = rt.tensorsFor(op);
  ArrayRef<int64_t> axes = op.getAxes();
  rt.call(WHALE_RT_FN(reduce),
          {rt.ctx, rt.i32(Kind), in[0], rt.i32(axes.size()), rt.i64Array(axes),
           out[0]});
  return out;
}

} // namespace

void whale::populateComputeRuntimePatterns(RewritePatternSet &patterns,
                                           const RuntimeLowering &lowering) {
  auto &p = patterns;
  const RuntimeLowering &l = lowering;
  addRuntimePattern<ConstantOp>(
      p, l, [](ConstantOp c, ValueRange, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(c);
        rt.call(WHALE_RT_FN(fill), {rt.ctx, out[0], rt.f64(c.getValue())});
        return out;
      });
  addRuntimePattern<MatmulOp>(
      p, l, [](MatmulOp m, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(m);
        rt.call(WHALE_RT_FN(matmul),
                {rt.ctx, in[0], in[1], out[0], rt.i32(m.getTransposeLhs()),
                 rt.i32(m.getTransposeRhs())});
        return out;
      });
  addRuntimePattern<AddOp>(p, l, lowerBinary<AddOp, WHALE_RT_ADD>);
  addRuntimePattern<SubOp>(p, l, lowerBinary<SubOp, WHALE_RT_SUB>);
  addRuntimePattern<MulOp>(p, l, lowerBinary<MulOp, WHALE_RT_MUL>);
  addRuntimePattern<DivOp>(p, l, lowerBinary<DivOp, WHALE_RT_DIV>);
  addRuntimePattern<NegOp>(p, l, lowerUnary<NegOp, WHALE_RT_NEG>);
  addRuntimePattern<ReluOp>(p, l, lowerUnary<ReluOp, WHALE_RT_RELU>);
  addRuntimePattern<GeluOp>(p, l, lowerUnary<GeluOp, WHALE_RT_GELU>);
  addRuntimePattern<TanhOp>(p, l, lowerUnary<TanhOp, WHALE_RT_TANH>);
  addRuntimePattern<ExpOp>(p, l, lowerUnary<ExpOp, WHALE_RT_EXP>);
  addRuntimePattern<LogOp>(p, l, lowerUnary<LogOp, WHALE_RT_LOG>);
  addRuntimePattern<SqrtOp>(p, l, lowerUnary<SqrtOp, WHALE_RT_SQRT>);
  addRuntimePattern<ReduceSumOp>(p, l, lowerReduce<ReduceSumOp, WHALE_RT_SUM>);
  addRuntimePattern<ReduceMeanOp>(p, l,
                                  lowerReduce<ReduceMeanOp, WHALE_RT_MEAN>);
  addRuntimePattern<ReduceMaxOp>(p, l, lowerReduce<ReduceMaxOp, WHALE_RT_MAX>);
  addRuntimePattern<CastOp>(
      p, l, [](CastOp c, ValueRange in, RuntimeCalls &rt) {
        return rt.callOnOperandsAndResults(c, in, WHALE_RT_FN(cast));
      });
  addRuntimePattern<CausalMaskOp>(
      p, l, [](CausalMaskOp m, ValueRange in, RuntimeCalls &rt) {
        return rt.callOnOperandsAndResults(m, in, WHALE_RT_FN(causal_mask));
      });
  addRuntimePattern<AttentionOp>(
      p, l, [](AttentionOp a, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(a);
        rt.call(WHALE_RT_FN(attention),
                {rt.ctx, in[0], in[1], in[2], rt.f64(a.getScale()),
                 rt.i32(attentionForm(a.getCausal(), a.getSequenceMajor())),
                 out[0]});
        return out;
      });
  addRuntimePattern<KvAttentionOp>(
      p, l, [](KvAttentionOp a, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(a);
        rt.call(WHALE_RT_FN(kv_attention),
                {rt.ctx, in[0], in[1], in[2], in[3], in[4], in[5],
                 rt.f64(a.getScale()), out[0], out[1], out[2]});
        return out;
      });
  addRuntimePattern<SoftmaxOp>(
      p, l, [](SoftmaxOp s, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(s);
        rt.call(WHALE_RT_FN(softmax),
                {rt.ctx, in[0], rt.i64(axisIn(s.getAxis(), s.getResult())),
                 out[0]});
        return out;
      });
  addRuntimePattern<LayerNormOp>(
      p, l, [](LayerNormOp n, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(n);
        rt.call(WHALE_RT_FN(layernorm),
                {rt.ctx, in[0], in[1], in[2], rt.f64(n.getEps()), out[0]});
        return out;
      });
  addRuntimePattern<RopeOp>(
      p, l, [](RopeOp r, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(r);
        std::optional<ArrayRef<double>> scaling = r.getScaling();
        rt.call(WHALE_RT_FN(rope),
                {rt.ctx, in[0], r.getPosition() ? in[1] : rt.null(),
                 rt.f64(r.getTheta()),
                 scaling ? rt.f64Array(*scaling) : rt.null(),
                 rt.i32(r.getInverse()), out[0]});
        return out;
      });
  addRuntimePattern<RmsNormOp>(
      p, l, [](RmsNormOp n, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(n);
        rt.call(WHALE_RT_FN(rms_norm),
                {rt.ctx, in[0], in[1], rt.f64(n.getEps()), out[0]});
        return out;
      });
  addRuntimePattern<BatchNormOp>(
      p, l, [](BatchNormOp n, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(n);
        rt.call(WHALE_RT_FN(batch_norm),
                {rt.ctx, in[0], in[1], in[2], in[3], in[4],
                 rt.f64(n.getMomentum()), rt.f64(n.getEps()),
                 rt.i64(n.getRowCopies()), out[0], out[1], out[2]});
        return out;
      });
  addRuntimePattern<TopKOp>(
      p, l, [](TopKOp t, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(t);
        Value none = rt.null();
        rt.call(WHALE_RT_FN(topk), {rt.ctx, in[0], rt.i64(t.getK()),
                                    t.getIndices() ? none : out[0],
                                    t.getIndices() ? out[0] : none});
        return out;
      });
  addRuntimePattern<MoeDispatchOp>(
      p, l, [](MoeDispatchOp d, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(d);
        rt.call(
            WHALE_RT_FN(moe_dispatch),
            {rt.ctx, in[0], in[1], d.getGates() ? in[2] : rt.null(), out[0]});
        return out;
      });
  addRuntimePattern<MoeCombineOp>(
      p, l, [](MoeCombineOp c, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(c);
        rt.call(
            WHALE_RT_FN(moe_combine),
            {rt.ctx, in[0], in[1], c.getGates() ? in[2] : rt.null(), out[0]});
        return out;
      });
  addRuntimePattern<DropoutOp>(
      p, l, [](DropoutOp d, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(d);
        rt.call(WHALE_RT_FN(dropout),
                {rt.ctx, in[0], rt.f64(d.getRate()), rt.i64(d.getKey()),
                 rt.i64(d.getRowOffset()), out[0]});
        return out;
      });
  addRuntimePattern<OneHotOp>(
      p, l, [](OneHotOp h, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(h);
        rt.call(WHALE_RT_FN(one_hot),
                {rt.ctx, in[0], rt.i64(h.getClasses()), out[0]});
        return out;
      });
  addRuntimePattern<Conv2dOp>(
      p, l, [](Conv2dOp c, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(c);
        rt.call(WHALE_RT_FN(conv2d),
                {rt.ctx, in[0], in[1], convGeometry(c, rt), out[0]});
        return out;
      });
  addRuntimePattern<Pool2dOp>(
      p, l, [](Pool2dOp pool, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(pool);
        rt.call(WHALE_RT_FN(pool2d), {rt.ctx, poolKind(pool.getKind(), rt),
                                      in[0], poolGeometry(pool, rt), out[0]});
        return out;
      });
  addRuntimePattern<EmbeddingOp>(
      p, l, [](EmbeddingOp e, ValueRange in, RuntimeCalls &rt) {
        return rt.callOnOperandsAndResults(e, in, WHALE_RT_FN(embedding));
      });
  addRuntimePattern<CrossEntropyOp>(
      p, l, [](CrossEntropyOp c, ValueRange in, RuntimeCalls &rt) {
        return rt.callOnOperandsAndResults(c, in, WHALE_RT_FN(cross_entropy));
      });
  // A reshape that is its input's last reader takes its memory (the plan
  // decides); the others copy.
  // A copy is a reshape to the same shape, which never aliases its input.
  addRuntimePattern<CopyOp>(p, l,
                            [](CopyOp c, ValueRange in, RuntimeCalls &rt) {
                              return rt.callOnOperandsAndResults(
                                  c, in, WHALE_RT_FN(reshape));
                            });
  addRuntimePattern<ReshapeOp>(
      p, l, [](ReshapeOp r, ValueRange in, RuntimeCalls &rt) -> Handles {
        if (rt.plan.takesInput(r)) {
          RankedTensorType type = r.getType();
          rt.call(WHALE_RT_FN(reshape_take),
                  {rt.ctx, in[0], rt.i32(type.getRank()),
                   rt.i64Array(type.getShape()), rt.slotOut()});
          return {rt.slotHandle()};
        }
        Handles out = rt.tensorsFor(r);
        rt.call(WHALE_RT_FN(reshape), {rt.ctx, in[0], out[0]});
        return out;
      });
  addRuntimePattern<TransposeOp>(
      p, l, [](TransposeOp t, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(t);
        rt.call(WHALE_RT_FN(transpose),
                {rt.ctx, in[0], rt.i64Array(t.getPermutation()), out[0]});
        return out;
      });
  addRuntimePattern<SliceOp>(
      p, l, [](SliceOp s, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(s);
        rt.call(WHALE_RT_FN(slice),
                {rt.ctx, in[0], rt.i64(axisIn(s.getAxis(), s.getResult())),
                 rt.i64(s.getStart()), rt.i64(s.getEnd()), out[0]});
        return out;
      });
  addRuntimePattern<ConcatOp>(
      p, l, [](ConcatOp c, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(c);
        Value array = rt.handleArray(in);
        rt.call(WHALE_RT_FN(concat),
                {rt.ctx, rt.i32(in.size()), array,
                 rt.i64(axisIn(c.getAxis(), c.getResult())), out[0]});
        return out;
      });
  // The fused ops of the GEMM epilogues and bf16 sums: each result's
  // tensor made before the call.
  addRuntimePattern<LinearOp>(
      p, l, [](LinearOp linear, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(linear);
        rt.call(WHALE_RT_FN(linear), {rt.ctx, in[0], in[1], in[2], out[0],
                                      out.size() > 1 ? out[1] : rt.null(),
                                      rt.i32(linear.getTransposeWeight()),
                                      rt.i32(linear.getGelu())});
        return out;
      });
  addRuntimePattern<RoundAndSumOp>(
      p, l, [](RoundAndSumOp r, ValueRange in, RuntimeCalls &rt) {
        return rt.callOnOperandsAndResults(r, in, WHALE_RT_FN(round_and_sum));
      });
}
