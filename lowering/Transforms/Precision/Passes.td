//===- Passes.td - amp: bf16 storage, widening, casts ----*- tablegen -*-===//
//
// Part of lowering/Passes.td, which defines WhalePass and includes every
// folder's part.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_TRANSFORMS_PRECISION_PASSES
#define WHALE_LOWERING_TRANSFORMS_PRECISION_PASSES

def WhaleAmpStorage : WhalePass<"whale-amp-storage"> {
  let summary = "Store a model's activations in bf16 (amp), parameters in fp32";
  let description = [{
    Every op of a model function computes in bf16: its float operands are
    converted with `whale.cast` (a parameter or an input once per block
    that reads it, before its first reader), its float results become
    bf16. The loss, softmax, reductions, batch normalization and top-k
    compute in fp32, as autocast keeps them; parameters stay fp32 masters;
    a taskgraph's yield and the function's return hand back the types
    they declare. Runs before autodiff: the gradient of a cast is the cast
    back, so activation gradients are bf16 and parameter gradients fp32.

    The train pipeline runs it under `amp-storage` (`whale run
    --bf16-activations`), with `-whale-widen-bf16` after the train step
    (docs/gpu.md, "bf16 storage").
  }];
}

def WhaleWidenBf16 : WhalePass<"whale-widen-bf16"> {
  let summary = "Run in fp32, between casts, each op the runtime has no bf16 kernel for";
  let description = [{
    Every whale op with a bf16 operand or result, other than those that
    move or fill elements whatever they are (cast, reshape, constant),
    computes in fp32: its bf16 operands are widened by `whale.cast` (once
    per block, before the first reader), its results are fp32 and rounded
    back to bf16 for their readers. First, cross entropy and its gradient
    take the bf16 logits amp's storage widened for them, as stored (their
    kernels widen each logit as they load it; the loss and gradients stay
    fp32). That is what a native bf16 kernel
    does, fp32 inside and rounded at the store, so the numbers hold and
    the simulator prices the conversions that run. Runs after the train
    step is built, before fusion.

    Then it chooses where a value is stored. A value rounded only for
    readers that widen it again stays fp32 (one rounding and two
    conversions fewer). A bf16 matmul's result that every reader widens
    is stored in fp32 too, unless it is a forward product, `fused-casts`
    says fusion follows and every widened copy is read in elementwise
    kernels: then it stays bf16 and the kernels widen it as they load it,
    half the bytes.
  }];
  let options = [
    Option<"fusedCasts", "fused-casts", "bool", /*default=*/"false",
           "-whale-fuse-elementwise follows, and takes casts into its kernels">,
  ];
}

#endif // WHALE_LOWERING_TRANSFORMS_PRECISION_PASSES
