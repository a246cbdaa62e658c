//===- WhaleFusionOps.td - elementwise chains run as one loop --*- tablegen -*-===//
//
// A fused region groups a chain of elementwise ops of one iteration shape
// (and the inputs they broadcast), and the sums that end the chain, so
// that the chain runs as one loop over memory, generated for the host
// instead of one runtime call per op.
// The ops inside stay whale ops: the region is the unfused program too.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_FUSION_OPS
#define WHALE_FUSION_OPS

def Whale_FusedOp : Whale_Op<"fused", [Pure, IsolatedFromAbove, SingleBlock,
    DeclareOpInterfaceMethods<Whale_CostOpInterface,
        ["getFlops", "getBytesRead"]>]> {
  let summary = "Elementwise ops of one iteration shape and their sums, run as one loop";
  let description = [{
    The body computes the f32 results from the block's arguments (the
    `inputs`) with elementwise whale ops: `add`, `sub`, `mul`, `div`, the
    unary functions, `unary_grad`, and a `binary_grad` whose result has
    its output gradient's shape. The iteration shape is the shape the
    inputs broadcast to (as NumPy does); every value these ops make has
    it. A chain may end in sums over some of its dimensions: a
    `binary_grad` of a broadcast operand (a bias's gradient),
    `reduce_sum` or `reduce_mean`, each summing a value of the iteration
    shape, read by nothing in the body but the yield. Or it may end in one
    op of each row (over the last dimension): `layernorm` or `softmax` of
    a value of the iteration shape, likewise read only by the yield, or
    only by its rounding to bf16 that only the yield reads (rows of at
    most 8192 elements); then
    every input is of the iteration shape, rows that repeat along it
    (a bias `[D]`, positions `[T, D]` over `[B, T, D]`) or one element,
    and the kernel runs row by row. Under amp's storage an input or
    result may be bf16: the body converts with `whale.cast` (a widening
    of an input, at the input's shape, as it is loaded; a rounding to
    bf16 of a value of the iteration shape, done in registers, stored as
    bf16 where the region yields it). Values used only
    inside the body are never stored: only the results are written to
    memory. `-whale-fuse-elementwise` makes these regions; the lowering
    generates one kernel per region.

    ```mlir
    %y = whale.fused (%x, %b) : (tensor<8x16xf32>, tensor<16xf32>) -> (tensor<8x16xf32>) {
    ^bb0(%a: tensor<8x16xf32>, %c: tensor<16xf32>):
      %s = whale.add %a, %c : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
      %g = whale.gelu %s : tensor<8x16xf32>
      whale.fused_yield %g : tensor<8x16xf32>
    }
    ```

    GELU's gradient and the bias's gradient, in one pass over `%dy`:

    ```mlir
    %dh, %db = whale.fused (%h, %b, %dy) : (tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>) {
    ^bb0(%x: tensor<8x16xf32>, %c: tensor<16xf32>, %g: tensor<8x16xf32>):
      %y = whale.gelu %x : tensor<8x16xf32>
      %d = whale.unary_grad gelu %x, %y, %g : tensor<8x16xf32>
      %s = whale.binary_grad add %x, %c, %d operand = 1 : tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32> -> tensor<16xf32>
      whale.fused_yield %d, %s : tensor<8x16xf32>, tensor<16xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<Whale_FloatTensor>:$inputs);
  let results = (outs Variadic<Whale_FloatTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` $inputs `)` attr-dict `:` `(` type($inputs) `)` `->` `(` type($results) `)` $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// A region at `b`'s insertion point whose body is a copy of `ops` (in
    /// order) on block arguments for `inputs`, yielding the copies of
    /// `results`; the originals are left for the caller to replace.
    static FusedOp createAround(mlir::OpBuilder &b, mlir::Location loc,
                                llvm::ArrayRef<mlir::Operation *> ops,
                                mlir::ValueRange inputs,
                                mlir::ValueRange results);
    /// The shape every op of the body iterates over: the inputs' shapes
    /// broadcast together (empty where they do not broadcast).
    llvm::SmallVector<int64_t> getIterationShape();
    /// The body's ops by name and operand numbering, e.g.
    /// "add(0,1) gelu(2) | 3": equal for regions that compute the same
    /// thing, so the simulator times one kernel once.
    std::string getBodySignature();
    /// Whether `op` may be part of a fused region's body as an
    /// elementwise op (its result has the iteration shape).
    static bool isFusible(mlir::Operation *op);
    /// Whether `op` may end a fused region's chain as a sum of one of its
    /// values over some dimensions.
    static bool isFusibleReduction(mlir::Operation *op);
    /// Whether `op` may end a fused region's chain as a function of each
    /// row (the last dimension) of a value: layernorm, softmax.
    static bool isFusibleRowOp(mlir::Operation *op);
    /// Whether `op` ends a chain (a sum or an op of each row): nothing
    /// in a region reads what it makes.
    static bool endsChain(mlir::Operation *op) {
      return isFusibleReduction(op) || isFusibleRowOp(op);
    }
    /// How a region that runs row by row over `iteration` reads an input
    /// of `type`: its M rows of the last dimension's width repeat every M
    /// rows of the iteration (M: all the rows for an input of the
    /// iteration shape, 1 for a row such as a bias, the positions' for a
    /// [T, D] embedding over [B, T, D]); 0 for one element; -1 where it
    /// is none of these.
    static int64_t getRowPeriod(mlir::Type type,
                                llvm::ArrayRef<int64_t> iteration);
    static bool isRowCompatible(mlir::Type type,
                                llvm::ArrayRef<int64_t> iteration) {
      return getRowPeriod(type, iteration) >= 0;
    }
    /// The op of each row this region ends in, if any.
    mlir::Operation *getRowOp();
    /// The rounding to bf16 (amp's storage) of a row op's result that a
    /// region stores in the result's place: a `whale.cast` that is the row
    /// op's only reader; null where there is none.
    static mlir::Operation *getRowRounding(mlir::Operation *rowOp);
    /// The widest row a region may round its row op's result in: its
    /// kernels keep the row's f32 values apart (in a GPU block's shared
    /// memory, on a CPU thread's stack) between the row op's passes.
    static constexpr int64_t kMaxRoundedRowWidth = 8192;
    /// The value of the iteration shape a fusible reduction sums.
    static mlir::Value reducedValue(mlir::Operation *reduction);
    /// For each dimension of `iteration` (the shape of reducedValue),
    /// whether the reduction's result keeps it (false: summed over).
    static llvm::SmallVector<bool>
    keptDimensions(mlir::Operation *reduction,
                   llvm::ArrayRef<int64_t> iteration);
  }];
}

def Whale_LinearOp : Whale_Op<"linear", [Pure,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "A matrix product with its bias (and GELU) applied as it is stored";
  let description = [{
    `input [..., M, K] x weight [K, N] + bias [N]` (`weight` `[N, K]` with
    `transpose_weight`), then the tanh GELU with `gelu`. What
    `-whale-gemm-epilogues` makes of a matmul whose only reader adds a
    bias (and whose sum only a GELU reads as a value): a GPU applies them
    in the GEMM's epilogue (cuBLASLt), so the product is never stored
    before them. With `gelu`, `preactivation` (when present) is the sum
    before the GELU, for the GELU's gradient.

    ```mlir
    %y = whale.linear %x, %w, %b : tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
    %h, %pre = whale.linear %x, %w, %b gelu : tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf32> -> tensor<8x32xf32>, tensor<8x32xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$input, Whale_FloatTensor:$weight,
                       Whale_FloatTensor:$bias, UnitAttr:$transpose_weight,
                       UnitAttr:$gelu);
  let results = (outs Whale_FloatTensor:$result,
                      Optional<Whale_FloatTensor>:$preactivation);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias (`gelu` $gelu^)? attr-dict `:` type($input)
    `,` type($weight) `,` type($bias) `->` type(results)
  }];
  let hasVerifier = 1;
}

def Whale_LinearWeightGradOp : Whale_Op<"linear_weight_grad", [Pure,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "A linear layer's weight and bias gradients in one GEMM";
  let description = [{
    For `y = input [..., M, K] x weight + bias [N]`, from `dout` (`y`'s
    gradient, `[..., M, N]`): `dweight`, the product of the input and
    `dout` over every row (`[K, N]`, or `[N, K]` with `transpose_weight`),
    and `dbias`, `dout` summed over every row (`[N]`). What
    `-whale-gemm-epilogues` makes of a matmul's weight gradient and a bias
    gradient that read the same `dout`: a GPU sums the bias gradient in the
    weight-gradient GEMM's epilogue (cuBLASLt's BGRADA/BGRADB), as that GEMM
    already reads every element of `dout`.

    ```mlir
    %dw, %db = whale.linear_weight_grad %x, %dy : tensor<8x16xf32>, tensor<8x32xf32> -> tensor<16x32xf32>, tensor<32xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$input, Whale_FloatTensor:$dout,
                       UnitAttr:$transpose_weight);
  let results = (outs Whale_FloatTensor:$dweight, Whale_FloatTensor:$dbias);
  let assemblyFormat = [{
    $input `,` $dout attr-dict `:` type($input) `,` type($dout) `->`
    type(results)
  }];
  let hasVerifier = 1;
}

def Whale_GeluMatmulGradOp : Whale_Op<"gelu_matmul_grad", [Pure,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "The gradient through a matmul and the GELU before it";
  let description = [{
    For `y = gelu(preactivation) x weight` (`preactivation [..., M, K]`,
    `weight [K, N]`, or `[N, K]` with `transpose_weight`), the gradient of
    `preactivation` from `dout` (`[..., M, N]`): `gelu'(preactivation)`
    times `dout x weight^T`. What `-whale-gemm-epilogues` makes of a
    matmul's input gradient whose only reader is the gradient of the GELU
    that made the input (an MLP's second layer): a GPU applies the GELU's
    derivative in the GEMM's epilogue (cuBLASLt's DGELU), so the product
    is never stored before it.

    ```mlir
    %dpre = whale.gelu_matmul_grad %pre, %w, %dy : tensor<8x64xf32>, tensor<64x16xf32>, tensor<8x16xf32> -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$preactivation,
                       Whale_FloatTensor:$weight, Whale_FloatTensor:$dout,
                       UnitAttr:$transpose_weight);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = [{
    $preactivation `,` $weight `,` $dout attr-dict `:` type($preactivation)
    `,` type($weight) `,` type($dout) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Whale_RoundAndSumOp : Whale_Op<"round_and_sum", [Pure,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "A gradient rounded to bf16 and summed over its rows, in one pass";
  let description = [{
    `rounded` is `input` (f32) rounded to bf16, to nearest with ties to
    even, as `whale.cast` rounds it; `sum` (f32) is `input` summed over
    its leading dimensions, as the gradient of a bias added to every row
    sums it (`whale.binary_grad add ... operand = 1`). Under amp's storage
    an activation gradient is read by both: its rounding feeds the
    weight's and the input's GEMMs, and the bias's gradient sums the fp32
    values. What `-whale-fuse-rounded-sums` makes of the two: one kernel
    reads the gradient once where two did, and sums it in the order the
    bias gradient's kernel does, so the bits are the same.

    ```mlir
    %r, %db = whale.round_and_sum %dy : tensor<8x16x32xf32> -> tensor<8x16x32xbf16>, tensor<32xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$input);
  let results = (outs Whale_FloatTensor:$rounded, Whale_FloatTensor:$sum);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type(results)
  }];
  let hasVerifier = 1;
}

def Whale_RoundedCrossEntropyGradOp : Whale_Op<"rounded_cross_entropy_grad",
    [Pure, DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Cross entropy's gradient rounded to bf16, with the bias's sum of it";
  let description = [{
    `whale.round_and_sum` of `whale.cross_entropy_grad`: the gradient
    `(softmax(logits) - onehot(labels)) * dloss` computed in f32, stored
    rounded to bf16 (`rounded`, the logits' shape) for the head's GEMMs,
    and summed in f32 over its leading dimensions (`sum`, the logits'
    last dimensions) for the head's bias. `-whale-fuse-rounded-sums`
    makes it where the round_and_sum is the gradient's only reader, so the
    f32 gradient (1.6 GB at GPT-2 small's batch 8) is never stored. The
    logits are f32 or bf16 (amp's storage), dloss f32.

    ```mlir
    %g, %db = whale.rounded_cross_entropy_grad %logits, %y, %dloss : tensor<8x100xbf16>, tensor<8xi32>, tensor<8xf32> -> tensor<8x100xbf16>, tensor<100xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$logits, Whale_IndexTensor:$labels,
                       Whale_FloatTensor:$dloss);
  let results = (outs Whale_FloatTensor:$rounded, Whale_FloatTensor:$sum);
  let assemblyFormat = [{
    $logits `,` $labels `,` $dloss attr-dict `:` type($logits) `,`
    type($labels) `,` type($dloss) `->` type(results)
  }];
  let hasVerifier = 1;
}

def Whale_FusedYieldOp : Whale_Op<"fused_yield", [
    Pure, Terminator, ReturnLike, HasParent<"FusedOp">]> {
  let summary = "The values a fused region writes";
  let description = [{
    Ends a `whale.fused` body; its operands become the region's results.

    ```mlir
    whale.fused_yield %g : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Variadic<Whale_FloatTensor>:$values);
  let assemblyFormat = "attr-dict $values `:` type($values)";
}

#endif // WHALE_FUSION_OPS
