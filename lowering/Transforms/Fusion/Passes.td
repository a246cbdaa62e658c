//===- Passes.td - fusions: attention, regions, epilogues -*- tablegen -*-===//
//
// Part of lowering/Passes.td, which defines WhalePass and includes every
// folder's part.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_TRANSFORMS_FUSION_PASSES
#define WHALE_LOWERING_TRANSFORMS_FUSION_PASSES

def WhaleFuseAttention : WhalePass<"whale-fuse-attention"> {
  let summary = "Fuse the attention pattern into one whale.attention";
  let description = [{
    Finds `matmul(softmax(mask(matmul(q, k^T) * scale)), v)` (the mask a
    causal_mask or none, the scale a constant factor or divisor or none)
    over `[..., T, E]` operands, each step read by the next only, and
    replaces it by `whale.attention q, k, v`: one op whose kernel never
    holds the `[..., T, T]` scores, and whose gradient is one
    `whale.attention_grad`. Runs before autodiff and planning, so every
    plan and the cost model see the fused op.

    Then, where q, k and v are each `transpose` swapping T and H of
    `[..., T, H, E]` read only by the attention, and its output is read
    only by the same swap back (GPT's split and merge of heads), the
    permutes go and the attention is `sequence_major` over the unpermuted
    operands: no transpose runs around it, forward or backward.
  }];
}

def WhaleGemmEpilogues : WhalePass<"whale-gemm-epilogues"> {
  let summary = "Fold linear layers' bias and GELU, and their gradients, into GEMM epilogues";
  let description = [{
    A matmul (left side not transposed, a weight matrix on the right, f32)
    whose only reader adds a bias of one value a column becomes a
    `whale.linear`; when a GELU reads the sum, the GELU joins it too, and
    the sum stays as the op's `preactivation` only where something else
    (the GELU's gradient) reads it. A GPU runs the op as one cuBLASLt
    GEMM with the bias and GELU applied in its epilogue. The gradient of
    the sum reads the product's shape only; it reads the fused result in
    its place. In the backward, a weight's gradient (a matrix shared by
    the rows) and a bias gradient that sum the same output gradient become
    one `whale.linear_weight_grad` (the bias summed in the GEMM's
    epilogue), and an input's gradient whose only reader is a GELU's
    gradient becomes one `whale.gelu_matmul_grad` (the derivative applied
    in the epilogue). A layernorm's input gradient whose only reader adds
    it to another gradient of its type takes that gradient as its `plus`
    operand: one pass over the rows adds it. Runs on programs about to be
    lowered, before -whale-fuse-elementwise; plans on GPUs run it.
  }];
}

def WhaleFuseRoundedSums : WhalePass<"whale-fuse-rounded-sums"> {
  let summary = "Round an activation gradient and sum its bias's gradient in one pass";
  let description = [{
    Under amp's storage (after -whale-widen-bf16 and -whale-gemm-epilogues)
    an fp32 activation gradient is often read by a `whale.cast` to bf16
    (for the GEMMs) and by a bias's gradient (`whale.binary_grad add` whose
    result is the gradient summed over its leading dimensions), in one
    block. The two become one `whale.round_and_sum`, standing where the
    earlier stood: one kernel reads the gradient once. Its sum is the bias
    gradient's, in the same order, so plans with and without it train
    alike. Where the gradient is a `whale.cross_entropy_grad` that only
    the new op reads (the logits'), the two become one
    `whale.rounded_cross_entropy_grad`, standing where the loss's gradient
    stood: the f32 gradient is never stored. Plans on GPUs under amp's
    storage run it.
  }];
}

def WhaleFuseElementwise : WhalePass<"whale-fuse-elementwise"> {
  let summary = "Group chains of elementwise ops into whale.fused regions";
  let description = [{
    Groups elementwise f32 ops (add, sub, mul, div, the unary functions,
    their gradients, and binary gradients that sum nothing) that iterate
    over one shape and feed one another into `whale.fused` regions, which
    the lowering turns into one generated loop each: values used only
    inside a region are never written to memory. An op joins its operand's
    group when no op outside the group that comes before it reads the
    group's values, so the region can stand where its last op stood, and
    no op that makes a value stands between the group and it, so no value
    lives longer than it did.
    First, the gradient of a sum's operand (or a difference's left one)
    that has the output's shape is replaced by the output's gradient: it
    is that value, and no kernel need copy it.
    Runs on programs about to be lowered (a rank program, the one-device
    train step), after every other pass.
    With `element-programs`, for GPUs, every region is one that an element
    program runs (runtime/ops/ElementProgram.h): its sums all sum over the same
    dimensions, and it has few enough operands for a GPU thread; a region
    whose program still cannot be written is put back as the ops it holds.
  }];
  let options = [
    Option<"elementPrograms", "element-programs", "bool", /*default=*/"false",
           "Only regions that an element program runs (GPU devices)">,
  ];
}

#endif // WHALE_LOWERING_TRANSFORMS_FUSION_PASSES
