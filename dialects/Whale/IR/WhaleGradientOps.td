//===- WhaleGradientOps.td - backward ops of the whale dialect -*- tablegen -*-===//
//
// The gradients that are not compositions of forward ops. Autodiff emits
// them next to forward ops, so the planner, sharding and the pipeline treat
// forward and backward alike. Each reads what its forward op read (and, for
// some, its output) and returns the gradient of one input; statistics a
// backward needs (layernorm's moments, the log-sum-exp, max's argmax) are
// recomputed from the forward inputs rather than kept alive.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_GRADIENT_OPS
#define WHALE_GRADIENT_OPS

def Whale_MatmulGradOp : Whale_Op<"matmul_grad", [Pure,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Gradient of one operand of a matrix product";
  let description = [{
    For `out = matmul(lhs, rhs)` with the same transposes, the gradient of
    operand `operand` (0: lhs, 1: rhs) from `dout`. A right-hand side shared
    by a batched left-hand side gets its gradient summed over the batch.

    ```mlir
    %dw = whale.matmul_grad %x, %w, %dy operand = 1 : tensor<8x16xf32>, tensor<16x4xf32>, tensor<8x4xf32> -> tensor<16x4xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$lhs, Whale_FloatTensor:$rhs,
                       Whale_FloatTensor:$dout,
                       ConfinedAttr<I64Attr, [IntMinValue<0>, IntMaxValue<1>]>:$operand,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $dout `operand` `=` $operand attr-dict `:` type($lhs) `,`
    type($rhs) `,` type($dout) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Whale_BinaryGradOp : Whale_Op<"binary_grad", [Pure,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Gradient of one operand of an elementwise operator";
  let description = [{
    For `out = lhs <kind> rhs` (broadcasting), the gradient of operand
    `operand` from `dout`, summed over the dimensions that operand was
    broadcast along, so it has the operand's shape.

    ```mlir
    %db = whale.binary_grad add %h, %b, %dy operand = 1 : tensor<8x4xf32>, tensor<4xf32>, tensor<8x4xf32> -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Whale_BinaryKindAttr:$kind, Whale_AnyTensor:$lhs,
                       Whale_AnyTensor:$rhs, Whale_AnyTensor:$dout,
                       ConfinedAttr<I64Attr, [IntMinValue<0>, IntMaxValue<1>]>:$operand);
  let results = (outs Whale_AnyTensor:$result);
  let assemblyFormat = [{
    custom<BinaryKeyword>($kind) $lhs `,` $rhs `,` $dout `operand` `=` $operand
    attr-dict `:` type($lhs) `,` type($rhs) `,` type($dout) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Whale_UnaryGradOp : Whale_Op<"unary_grad", [Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Gradient of an elementwise function";
  let description = [{
    From the forward input `x`, the forward output `y` and `dy`, the
    gradient `dx` of the function `kind`.

    ```mlir
    %dx = whale.unary_grad gelu %x, %y, %dy : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Whale_UnaryKindAttr:$kind, Whale_FloatTensor:$x,
                       Whale_FloatTensor:$y, Whale_FloatTensor:$dy);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = [{
    custom<UnaryKeyword>($kind) $x `,` $y `,` $dy attr-dict `:` type($result)
  }];
}

def Whale_FormulaGradOp : Whale_Op<"formula_grad", [Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Gradient of an elementwise op defined by its formula";
  let description = [{
    From the forward input `x`, the forward output `y` and `dy`, the
    gradient `dx` of the op `of` names, computed by that op's derivative
    (ScalarFormulaOpInterface) in a fused region's kernel.

    ```mlir
    %dx = whale.formula_grad "whale.silu" %x, %y, %dy : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins StrAttr:$of, Whale_FloatTensor:$x,
                       Whale_FloatTensor:$y, Whale_FloatTensor:$dy);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = "$of $x `,` $y `,` $dy attr-dict `:` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The formulas of the op `of` names; null where it names none.
    ScalarFormulaOpInterface::Concept *getFormula();
  }];
}

def Whale_SoftmaxGradOp : Whale_Op<"softmax_grad", [Pure, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Gradient of a softmax";
  let description = [{
    `y * (dy - sum(dy * y))` along `axis`, from the forward output `y`.

    ```mlir
    %dx = whale.softmax_grad %y, %dy axis = -1 : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$y, Whale_FloatTensor:$dy, I64Attr:$axis);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = "$y `,` $dy `axis` `=` $axis attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Whale_CausalMaskGradOp : Whale_Op<"causal_mask_grad", [Pure,
    SameOperandsAndResultType,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Gradient of a causal mask";
  let description = [{
    `dy` with the masked (future) positions set to zero.

    ```mlir
    %dx = whale.causal_mask_grad %dy : tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$dy);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = "$dy attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Whale_AttentionGradOp : Whale_Op<"attention_grad", [Pure,
    AllTypesMatch<["query", "out"]>, AllTypesMatch<["dout", "dquery"]>,
    AllTypesMatch<["key", "value"]>, AllTypesMatch<["dkey", "dvalue"]>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Gradients of a fused attention";
  let description = [{
    From the forward operands, its output and `dout`: the gradients of
    query, key and value. The probabilities are recomputed a row at a time.
    `sequence_major` as the forward's: every tensor `[..., T, H, E]`.

    Under amp's storage the forward's operands and output may be bf16 while
    `dout` and the gradients stay f32 (a gradient GEMM's result is stored
    in fp32, and the biases' gradients sum these): then the types end in
    `-> f32`, the element type of `dout` and the three gradients.

    ```mlir
    %dq, %dk, %dv = whale.attention_grad %q, %k, %v, %o, %do scale = 2.500000e-01 causal : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
    %eq, %ek, %ev = whale.attention_grad %a, %b, %c, %p, %dp scale = 2.500000e-01 causal : tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16> -> f32
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$query, Whale_FloatTensor:$key,
                       Whale_FloatTensor:$value, Whale_FloatTensor:$out,
                       Whale_FloatTensor:$dout, F64Attr:$scale,
                       UnitAttr:$causal, UnitAttr:$sequence_major);
  let results = (outs Whale_FloatTensor:$dquery, Whale_FloatTensor:$dkey,
                      Whale_FloatTensor:$dvalue);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $out `,` $dout `scale` `=` $scale
    (`causal` $causal^)? (`sequence_major` $sequence_major^)? attr-dict `:`
    type($query) `,` type($key) ``
    custom<GradientElement>(type($dout), type($dkey), ref(type($query)),
                            ref(type($key)))
  }];
  let builders = [
    // The gradients in dout's element type, each its operand's shape.
    OpBuilder<(ins "::mlir::Value":$query, "::mlir::Value":$key,
                   "::mlir::Value":$value, "::mlir::Value":$out,
                   "::mlir::Value":$dout, "::mlir::FloatAttr":$scale,
                   "::mlir::UnitAttr":$causal,
                   "::mlir::UnitAttr":$sequence_major)>
  ];
  let hasVerifier = 1;
}

def Whale_TopKGradOp : Whale_Op<"topk_grad", [Pure,
    AllTypesMatch<["input", "dinput"]>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Gradient of a top-k's values";
  let description = [{
    `dy` `[..., k]` back at the positions the top-k of `input` took, zero
    elsewhere (the positions found again).

    ```mlir
    %dx = whale.topk_grad %g, %dy k = 2 : tensor<16x8xf32>, tensor<16x2xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$input, Whale_FloatTensor:$dy,
                       I64Attr:$k);
  let results = (outs Whale_FloatTensor:$dinput);
  let assemblyFormat = [{
    $input `,` $dy `k` `=` $k attr-dict `:` type($input) `,` type($dy)
  }];
  let hasVerifier = 1;
}

def Whale_MoeGateGradOp : Whale_Op<"moe_gate_grad", [Pure,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Gradient of a mixture of experts' gates";
  let description = [{
    For `tokens` `[G, S, D]`, `slotted` `[E, G * C, D]` and `experts`
    `[G, S, k]` routed as `whale.moe_dispatch` routes them: each choice's
    dot product of its token's row with its slot's row, `[G, S, k]`, zero
    for a dropped choice. With the combine's output gradient as `tokens`
    and the experts' outputs as `slotted` it is the combine's gate
    gradient; with the tokens and the dispatch's output gradient, the
    dispatch's.

    ```mlir
    %dg = whale.moe_gate_grad %dy, %h, %e
        : tensor<2x6x8xf32>, tensor<4x6x8xf32>, tensor<2x6x1xi32> -> tensor<2x6x1xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$tokens, Whale_FloatTensor:$slotted,
                       Whale_I32Tensor:$experts);
  let results = (outs Whale_FloatTensor:$dgates);
  let assemblyFormat = [{
    $tokens `,` $slotted `,` $experts attr-dict `:` type($tokens) `,`
    type($slotted) `,` type($experts) `->` type($dgates)
  }];
  let hasVerifier = 1;
}

def Whale_Conv2dGradOp : Whale_Op<"conv2d_grad", [Pure,
    AllTypesMatch<["input", "dinput"]>, AllTypesMatch<["weight", "dweight"]>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Gradients of a 2-D convolution";
  let description = [{
    From the forward input, the weight and `dy`: the gradients of the input
    and of the weight, for the window and groups of the forward op.

    ```mlir
    %dx, %dw = whale.conv2d_grad %x, %w, %dy stride = [1, 1] padding = [1, 1] dilation = [1, 1] groups = 1 : tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<8x16x32x32xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$input, Whale_FloatTensor:$weight,
                       Whale_FloatTensor:$dy, DenseI64ArrayAttr:$stride,
                       DenseI64ArrayAttr:$padding, DenseI64ArrayAttr:$dilation,
                       I64Attr:$groups);
  let results = (outs Whale_FloatTensor:$dinput, Whale_FloatTensor:$dweight);
  let assemblyFormat = [{
    $input `,` $weight `,` $dy `stride` `=` $stride `padding` `=` $padding
    `dilation` `=` $dilation `groups` `=` $groups attr-dict `:` type($input)
    `,` type($weight) `,` type($dy)
  }];
  let hasVerifier = 1;
}

def Whale_Pool2dGradOp : Whale_Op<"pool2d_grad", [Pure,
    AllTypesMatch<["input", "dinput"]>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Gradient of a max or average pooling";
  let description = [{
    From the forward input and `dy`: the input's gradient. A max pooling's
    windows are searched again for their maxima (the first among equals).

    ```mlir
    %dx = whale.pool2d_grad %x, %dy kind = "max" kernel = [2, 2] stride = [2, 2] padding = [0, 0] : tensor<8x16x32x32xf32>, tensor<8x16x16x16xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$input, Whale_FloatTensor:$dy,
                       StrAttr:$kind, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$stride, DenseI64ArrayAttr:$padding);
  let results = (outs Whale_FloatTensor:$dinput);
  let assemblyFormat = [{
    $input `,` $dy `kind` `=` $kind `kernel` `=` $kernel `stride` `=` $stride
    `padding` `=` $padding attr-dict `:` type($input) `,` type($dy)
  }];
  let hasVerifier = 1;
}

def Whale_LayerNormGradOp : Whale_Op<"layernorm_grad", [Pure,
    AllTypesMatch<["x", "dy", "dx"]>, AllTypesMatch<["gamma", "dgamma", "dbeta"]>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Gradients of a layer normalization";
  let description = [{
    From the forward input, gamma and `dy`: the gradients of the input, of
    gamma and of beta. The row moments are recomputed.

    With `plus %r`, dx is `%r + ` the input's gradient: the gradient of a
    residual sum that the layer's input also fed, added in the same pass
    over the rows (-whale-gemm-epilogues makes it on GPU plans). `%r` has
    the input's type.

    ```mlir
    %dx, %dg, %db = whale.layernorm_grad %x, %g, %dy eps = 1.000000e-05 : tensor<8x16xf32>, tensor<16xf32>
    %dx2, %dg2, %db2 = whale.layernorm_grad %x, %g, %dy plus %r eps = 1.000000e-05 : tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$x, Whale_FloatTensor:$gamma,
                       Whale_FloatTensor:$dy,
                       Optional<Whale_FloatTensor>:$residual, F64Attr:$eps);
  let results = (outs Whale_FloatTensor:$dx, Whale_FloatTensor:$dgamma,
                      Whale_FloatTensor:$dbeta);
  let assemblyFormat = [{
    $x `,` $gamma `,` $dy (`plus` $residual^)? `eps` `=` $eps attr-dict `:`
    type($x) `,` type($gamma) (`,` type($residual)^)?
  }];
  let hasVerifier = 1;
}

def Whale_RmsNormGradOp : Whale_Op<"rms_norm_grad", [Pure,
    AllTypesMatch<["x", "dy", "dx"]>, AllTypesMatch<["weight", "dweight"]>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Gradients of a root-mean-square normalization";
  let description = [{
    From the forward input, the weight and `dy`: the gradients of the input
    and of the weight. Each row's statistic is recomputed.

    With `plus %r`, dx is `%r + ` the input's gradient: the gradient of the
    residual sum a Llama block's normalized input also fed, added as each
    row is written (-whale-gemm-epilogues and -whale-fuse-elementwise make
    it). `%r` has the input's type.

    ```mlir
    %dx, %dw = whale.rms_norm_grad %x, %w, %dy eps = 1.000000e-05 : tensor<8x16xf32>, tensor<16xf32>
    %dx2, %dw2 = whale.rms_norm_grad %x, %w, %dy plus %r eps = 1.000000e-05 : tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$x, Whale_FloatTensor:$weight,
                       Whale_FloatTensor:$dy,
                       Optional<Whale_FloatTensor>:$residual, F64Attr:$eps);
  let results = (outs Whale_FloatTensor:$dx, Whale_FloatTensor:$dweight);
  let assemblyFormat = [{
    $x `,` $weight `,` $dy (`plus` $residual^)? `eps` `=` $eps attr-dict `:`
    type($x) `,` type($weight) (`,` type($residual)^)?
  }];
  let hasVerifier = 1;
}

def Whale_BatchNormGradOp : Whale_Op<"batch_norm_grad", [Pure,
    AllTypesMatch<["x", "dy", "dx"]>,
    AllTypesMatch<["gamma", "mean", "invstd", "dgamma", "dbeta"]>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Gradients of a batch normalization";
  let description = [{
    From the forward input, gamma, the statistics the forward used and
    `dy`: dx = gamma x invstd x (dy - mean(dy) - xhat x mean(dy x xhat)),
    the means over the whole batch (data-parallel replicas sum their rows'
    two channel sums over the replica group, one all-reduce), and this
    rank's rows' dgamma = sum(dy x xhat) and dbeta = sum(dy), which the
    gradient sync sums as any parameter's.

    ```mlir
    %dx, %dg, %db = whale.batch_norm_grad %x, %g, %m, %s, %dy : tensor<8x4x6x6xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$x, Whale_FloatTensor:$gamma,
                       Whale_FloatTensor:$mean, Whale_FloatTensor:$invstd,
                       Whale_FloatTensor:$dy);
  let results = (outs Whale_FloatTensor:$dx, Whale_FloatTensor:$dgamma,
                      Whale_FloatTensor:$dbeta);
  let assemblyFormat = [{
    $x `,` $gamma `,` $mean `,` $invstd `,` $dy attr-dict `:` type($x) `,`
    type($gamma)
  }];
  let hasVerifier = 1;
}

def Whale_EmbeddingGradOp : Whale_Op<"embedding_grad", [Pure,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Gradient of an embedding table";
  let description = [{
    A zero table with each row of `dout` added at its id (rows that repeat
    accumulate).

    ```mlir
    %dt = whale.embedding_grad %ids, %dy : tensor<4x32xi32>, tensor<4x32x64xf32> -> tensor<256x64xf32>
    ```
  }];
  let arguments = (ins Whale_IndexTensor:$ids, Whale_FloatTensor:$dout);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = [{
    $ids `,` $dout attr-dict `:` type($ids) `,` type($dout) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Whale_CrossEntropyGradOp : Whale_Op<"cross_entropy_grad", [Pure,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Gradient of softmax cross entropy";
  let description = [{
    `(softmax(logits) - onehot(labels)) * dloss`, shaped like the logits,
    in dloss's element type. Under amp's storage the logits may be bf16
    with dloss and the gradient f32 (the loss is fp32, and so is what the
    bias's gradient sums): then the types end in `-> f32`.

    ```mlir
    %dl = whale.cross_entropy_grad %logits, %y, %dloss : tensor<8x100xf32>, tensor<8xi32>, tensor<8xf32>
    %dm = whale.cross_entropy_grad %stored, %y, %dloss : tensor<8x100xbf16>, tensor<8xi32>, tensor<8xf32> -> f32
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$logits, Whale_IndexTensor:$labels,
                       Whale_FloatTensor:$dloss);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $dloss attr-dict `:` type($logits) `,` type($labels)
    `,` type($dloss) `` custom<LogitsGradient>(type($result), ref(type($logits)))
  }];
  let builders = [
    // The gradient in dloss's element type, the logits' shape.
    OpBuilder<(ins "::mlir::Value":$logits, "::mlir::Value":$labels,
                   "::mlir::Value":$dloss)>
  ];
  let hasVerifier = 1;
}

def Whale_ReduceGradOp : Whale_Op<"reduce_grad", [Pure,
    AllTypesMatch<["x", "result"]>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Gradient of a reduction";
  let description = [{
    For `out = reduce_<kind>(x, axes)`: `dout` spread back over the reduced
    axes (divided by their size for `mean`; to the winning element only for
    `max`).

    ```mlir
    %dx = whale.reduce_grad mean %x, %dy axes = [1] : tensor<8x16xf32>, tensor<8xf32>
    ```
  }];
  let arguments = (ins Whale_ReduceKindAttr:$kind, Whale_FloatTensor:$x,
                       Whale_FloatTensor:$dout, DenseI64ArrayAttr:$axes);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = [{
    custom<ReduceKeyword>($kind) $x `,` $dout `axes` `=` $axes attr-dict `:`
    type($x) `,` type($dout)
  }];
  let hasVerifier = 1;
}

def Whale_SliceGradOp : Whale_Op<"slice_grad", [Pure,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Gradient of a slice";
  let description = [{
    A zero tensor of the sliced input's shape with `dout` placed at `start`
    along `axis`.

    ```mlir
    %dx = whale.slice_grad %dy axis = 1, start = 8 : tensor<4x8xf32> -> tensor<4x24xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$dout, I64Attr:$axis, I64Attr:$start);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = [{
    $dout `axis` `=` $axis `,` `start` `=` $start attr-dict `:` type($dout)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // WHALE_GRADIENT_OPS
