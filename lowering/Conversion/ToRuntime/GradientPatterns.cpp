//===- GradientPatterns.cpp - The gradients' runtime calls ----------------===//
//
// A gradient op a new tensor for each result and one whale_rt_* call. Where
// one call can compute the gradient of either operand, the operand not
// asked for gets a null handle.
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/Conversion/ToRuntime/OpAttributes.h"
#include "lowering/Conversion/ToRuntime/RuntimePatterns.h"

using namespace mlir;
using namespace whale;

void whale::populateGradientRuntimePatterns(RewritePatternSet &patterns,
                                            const RuntimeLowering &lowering) {
  auto &p = patterns;
  const RuntimeLowering &l = lowering;
  addRuntimePattern<MatmulGradOp>(
      p, l, [](MatmulGradOp g, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(g);
        bool lhs = g.getOperand() == 0;
        rt.call(WHALE_RT_FN(matmul_grad),
                {rt.ctx, in[0], in[1], in[2], lhs ? out[0] : rt.null(),
                 lhs ? rt.null() : out[0], rt.i32(g.getTransposeLhs()),
                 rt.i32(g.getTransposeRhs())});
        return out;
      });
  addRuntimePattern<BinaryGradOp>(
      p, l, [](BinaryGradOp g, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(g);
        bool lhs = g.getOperand() == 0;
        rt.call(WHALE_RT_FN(binary_grad),
                {rt.ctx, rt.i32(static_cast<int32_t>(g.getKind())), in[0],
                 in[1], in[2], lhs ? out[0] : rt.null(),
                 lhs ? rt.null() : out[0]});
        return out;
      });
  addRuntimePattern<UnaryGradOp>(
      p, l, [](UnaryGradOp g, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(g);
        rt.call(WHALE_RT_FN(unary_grad),
                {rt.ctx, rt.i32(static_cast<int32_t>(g.getKind())), in[0],
                 in[1], in[2], out[0]});
        return out;
      });
  addRuntimePattern<SoftmaxGradOp>(
      p, l, [](SoftmaxGradOp g, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(g);
        rt.call(WHALE_RT_FN(softmax_grad),
                {rt.ctx, in[0], in[1],
                 rt.i64(axisIn(g.getAxis(), g.getResult())), out[0]});
        return out;
      });
  addRuntimePattern<CausalMaskGradOp>(
      p, l, [](CausalMaskGradOp g, ValueRange in, RuntimeCalls &rt) {
        return rt.callOnOperandsAndResults(g, in,
                                           WHALE_RT_FN(causal_mask_grad));
      });
  addRuntimePattern<EmbeddingGradOp>(
      p, l, [](EmbeddingGradOp g, ValueRange in, RuntimeCalls &rt) {
        return rt.callOnOperandsAndResults(g, in, WHALE_RT_FN(embedding_grad));
      });
  addRuntimePattern<CrossEntropyGradOp>(
      p, l, [](CrossEntropyGradOp g, ValueRange in, RuntimeCalls &rt) {
        return rt.callOnOperandsAndResults(g, in,
                                           WHALE_RT_FN(cross_entropy_grad));
      });
  addRuntimePattern<RoundedCrossEntropyGradOp>(
      p, l, [](RoundedCrossEntropyGradOp g, ValueRange in, RuntimeCalls &rt) {
        return rt.callOnOperandsAndResults(
            g, in, WHALE_RT_FN(cross_entropy_grad_rounded));
      });
  addRuntimePattern<ReduceGradOp>(
      p, l, [](ReduceGradOp g, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(g);
        rt.call(WHALE_RT_FN(reduce_grad),
                {rt.ctx, rt.i32(static_cast<int32_t>(g.getKind())), in[0],
                 rt.i32(g.getAxes().size()), rt.i64Array(g.getAxes()), in[1],
                 out[0]});
        return out;
      });
  addRuntimePattern<SliceGradOp>(
      p, l, [](SliceGradOp g, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(g);
        rt.call(WHALE_RT_FN(slice_grad),
                {rt.ctx, in[0], rt.i64(axisIn(g.getAxis(), g.getResult())),
                 rt.i64(g.getStart()), out[0]});
        return out;
      });
  addRuntimePattern<AttentionGradOp>(
      p, l, [](AttentionGradOp g, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(g);
        rt.call(WHALE_RT_FN(attention_grad),
                {rt.ctx, in[0], in[1], in[2], in[3], in[4],
                 rt.f64(g.getScale()),
                 rt.i32(attentionForm(g.getCausal(), g.getSequenceMajor())),
                 out[0], out[1], out[2]});
        return out;
      });
  addRuntimePattern<LinearWeightGradOp>(
      p, l, [](LinearWeightGradOp g, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(g);
        rt.call(WHALE_RT_FN(linear_weight_grad),
                {rt.ctx, in[0], in[1], out[0], out[1],
                 rt.i32(g.getTransposeWeight())});
        return out;
      });
  addRuntimePattern<GeluMatmulGradOp>(
      p, l, [](GeluMatmulGradOp g, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(g);
        rt.call(WHALE_RT_FN(gelu_matmul_grad),
                {rt.ctx, in[0], in[1], in[2], out[0],
                 rt.i32(g.getTransposeWeight())});
        return out;
      });
  addRuntimePattern<LayerNormGradOp>(
      p, l, [](LayerNormGradOp g, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(g);
        Value eps = rt.f64(g.getEps());
        if (g.getResidual())
          rt.call(WHALE_RT_FN(layernorm_grad_residual),
                  {rt.ctx, in[0], in[1], eps, in[2], in[3], out[0], out[1],
                   out[2]});
        else
          rt.call(WHALE_RT_FN(layernorm_grad),
                  {rt.ctx, in[0], in[1], eps, in[2], out[0], out[1], out[2]});
        return out;
      });
  addRuntimePattern<RmsNormGradOp>(
      p, l, [](RmsNormGradOp g, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(g);
        if (g.getResidual())
          rt.call(WHALE_RT_FN(rms_norm_grad_residual),
                  {rt.ctx, in[0], in[1], rt.f64(g.getEps()), in[2], in[3],
                   out[0], out[1]});
        else
          rt.call(WHALE_RT_FN(rms_norm_grad),
                  {rt.ctx, in[0], in[1], rt.f64(g.getEps()), in[2], out[0],
                   out[1]});
        return out;
      });
  addRuntimePattern<BatchNormGradOp>(
      p, l, [](BatchNormGradOp g, ValueRange in, RuntimeCalls &rt) {
        return rt.callOnOperandsAndResults(g, in, WHALE_RT_FN(batch_norm_grad));
      });
  addRuntimePattern<Conv2dGradOp>(
      p, l, [](Conv2dGradOp g, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(g);
        // A gradient nothing reads is not computed (the image's, at the
        // first convolution: a data gradient as costly as the forward).
        auto wanted = [&](unsigned i) {
          return g->getResult(i).use_empty() ? rt.null() : out[i];
        };
        rt.call(WHALE_RT_FN(conv2d_grad),
                {rt.ctx, in[0], in[1], in[2], convGeometry(g, rt), wanted(0),
                 wanted(1)});
        return out;
      });
  addRuntimePattern<Pool2dGradOp>(
      p, l, [](Pool2dGradOp g, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(g);
        rt.call(WHALE_RT_FN(pool2d_grad),
                {rt.ctx, poolKind(g.getKind(), rt), in[0], in[1],
                 poolGeometry(g, rt), out[0]});
        return out;
      });
  addRuntimePattern<TopKGradOp>(
      p, l, [](TopKGradOp g, ValueRange in, RuntimeCalls &rt) {
        Handles out = rt.tensorsFor(g);
        rt.call(WHALE_RT_FN(topk_grad),
                {rt.ctx, in[0], rt.i64(g.getK()), in[1], out[0]});
        return out;
      });
  addRuntimePattern<MoeGateGradOp>(
      p, l, [](MoeGateGradOp g, ValueRange in, RuntimeCalls &rt) {
        return rt.callOnOperandsAndResults(g, in, WHALE_RT_FN(moe_gate_grad));
      });
}
