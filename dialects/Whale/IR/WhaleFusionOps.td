//===- WhaleFusionOps.td - elementwise chains run as one loop --*- tablegen -*-===//
//
// A fused region groups a chain of elementwise ops of one iteration shape
// (and the inputs they broadcast) so that the chain runs as one loop over
// memory, generated for the host instead of one runtime call per op.
// The ops inside stay whale ops: the region is the unfused program too.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_FUSION_OPS
#define WHALE_FUSION_OPS

def Whale_FusedOp : Whale_Op<"fused", [Pure, IsolatedFromAbove, SingleBlock,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getFlops"]>]> {
  let summary = "Elementwise ops of one iteration shape, run as one loop";
  let description = [{
    The body computes the f32 results from the block's arguments (the
    `inputs`) with elementwise whale ops only: `add`, `sub`, `mul`, `div`,
    the unary functions, `unary_grad`, and a `binary_grad` whose result has
    its output gradient's shape. Every value the body makes has the
    iteration shape, the shape of every result; inputs broadcast to it as
    NumPy does. Values used only inside the body are never stored: only
    the results are written to memory. `-whale-fuse-elementwise` makes
    these regions; the lowering generates one kernel per region.

    ```mlir
    %y = whale.fused (%x, %b) : (tensor<8x16xf32>, tensor<16xf32>) -> (tensor<8x16xf32>) {
    ^bb0(%a: tensor<8x16xf32>, %c: tensor<16xf32>):
      %s = whale.add %a, %c : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
      %g = whale.gelu %s : tensor<8x16xf32>
      whale.fused_yield %g : tensor<8x16xf32>
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
    /// The shape every op of the body iterates over.
    llvm::ArrayRef<int64_t> getIterationShape() {
      return llvm::cast<mlir::RankedTensorType>(getResult(0).getType())
          .getShape();
    }
    /// The body's ops by name and operand numbering, e.g.
    /// "add(0,1) gelu(2) | 3": equal for regions that compute the same
    /// thing, so the simulator times one kernel once.
    std::string getBodySignature();
    /// Whether `op` may be part of a fused region's body.
    static bool isFusible(mlir::Operation *op);
  }];
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
