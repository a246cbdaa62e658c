//===- OpCost.cpp - what an op costs, as a device model prices it ---------===//

#include "perfmodel/OpCost.h"

#include "dialects/Whale/IR/ProductCosts.h"
#include "dialects/Whale/IR/WhaleOps.h"

namespace whale::perf {

void setProductShape(OpCost &c, mlir::RankedTensorType result) {
  llvm::ArrayRef<int64_t> shape = result.getShape();
  c.matmul = true;
  c.m = shape.size() >= 2 ? shape[shape.size() - 2] : 1;
  c.n = shape.empty() ? 1 : shape.back();
  c.batch = 1;
  for (size_t i = 0; i + 2 < shape.size(); ++i)
    c.batch *= shape[i];
  double elements = double(c.batch) * c.m * c.n;
  c.k = elements > 0 ? static_cast<int64_t>(c.flops / (2 * elements)) : 0;
}

static mlir::RankedTensorType typeOf(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}

OpCost opCostOf(mlir::Operation *op, bool bf16,
                llvm::function_ref<bool(mlir::Value)> needed) {
  auto cost = llvm::cast<CostOpInterface>(op);
  OpCost c;
  c.flops = static_cast<double>(cost.getFlops());
  c.bytes = static_cast<double>(cost.getBytesRead() + cost.getBytesWritten());
  // A linear layer takes its product's time: the bias and GELU are applied
  // to each tile of the result in registers as the GEMM stores it, not at
  // the matrix rate (its FLOPs, which count them, stay what they are).
  // Set first: the product's depth is read from its FLOPs.
  // So do the gradients' epilogues: the bias's sum and the GELU's
  // derivative.
  if (auto l = llvm::dyn_cast<LinearOp>(op))
    c.flops = static_cast<double>(
        productFlops(l.getInput().getType(), l.getResult().getType(), false));
  if (auto g = llvm::dyn_cast<LinearWeightGradOp>(op))
    c.flops = static_cast<double>(
        productFlops(g.getInput().getType(), g.getDout().getType(), false));
  if (auto g = llvm::dyn_cast<GeluMatmulGradOp>(op))
    c.flops = static_cast<double>(
        productFlops(g.getDout().getType(), g.getResult().getType(), false));
  if (llvm::isa<MatmulOp, MatmulGradOp, LinearOp, LinearWeightGradOp,
                GeluMatmulGradOp>(op)) {
    setProductShape(
        c, llvm::cast<mlir::RankedTensorType>(op->getResult(0).getType()));
    c.bf16 = bf16;
  }
  // A convolution runs as products (oneDNN's direct kernels on the CPU
  // reach the GEMM rate: runtime/cpu/DnnlConv.h; the composed path is a
  // GEMM over im2col columns): per group, [O/G, C/G KH KW] times
  // [C/G KH KW, N OH OW]. Its gradient is two such products, priced at
  // that shape (its FLOPs count both).
  // Around the products, the reorders between Whale's NCHW and oneDNN's
  // blocked layouts, each a read and a write: forward the input, the
  // weights and the output; backward dy, the input, the weights, dx and
  // dw.
  auto bytes = [](mlir::Value v) { return 4.0 * typeOf(v).getNumElements(); };
  if (auto conv = llvm::dyn_cast<Conv2dOp>(op)) {
    setConvShape(c, typeOf(conv.getWeight()), typeOf(conv.getResult()),
                 conv.getGroups());
    c.passBytes = 2 * (bytes(conv.getInput()) + bytes(conv.getWeight()) +
                       bytes(conv.getResult()));
  }
  if (auto conv = llvm::dyn_cast<Conv2dGradOp>(op)) {
    setConvShape(c, typeOf(conv.getWeight()), typeOf(conv.getDy()),
                 conv.getGroups());
    // dx has the input's size, dw the weights'.
    c.passBytes = 2 * (bytes(conv.getDy()) + 2 * bytes(conv.getInput()) +
                       2 * bytes(conv.getWeight()));
    // Without dx (the image's, at a network's first convolution) one
    // product and its reorders: dy, the input and dw.
    mlir::Value dx = conv->getResult(0);
    if (needed ? !needed(dx) : dx.use_empty()) {
      c.flops /= 2;
      c.bytes -= bytes(dx);
      c.passBytes = 2 * (bytes(conv.getDy()) + bytes(conv.getInput()) +
                         bytes(conv.getWeight()));
    }
  }
  // Fused attention is GEMMs over tiles of (query, key) pairs: priced as
  // products of T x E by E x Tk per head, at the matrix rate, and on a GPU
  // by the kernels the runtime launches for it (AttentionCost.h).
  if (auto a = llvm::dyn_cast<AttentionOp>(op))
    setAttentionShape(c, typeOf(a.getQuery()), typeOf(a.getKey()),
                      {a.getCausal(), a.getSequenceMajor()},
                      /*backward=*/false, bf16);
  if (auto a = llvm::dyn_cast<AttentionGradOp>(op))
    setAttentionShape(c, typeOf(a.getQuery()), typeOf(a.getKey()),
                      {a.getCausal(), a.getSequenceMajor()},
                      /*backward=*/true, bf16);
  return c;
}

void setConvShape(OpCost &c, mlir::RankedTensorType weight,
                  mlir::RankedTensorType output, int64_t groups) {
  llvm::ArrayRef<int64_t> w = weight.getShape(), y = output.getShape();
  if (w.size() != 4 || y.size() != 4 || groups < 1)
    return;
  c.matmul = true;
  c.direct = true;
  c.batch = groups;
  c.m = w[0] / groups;
  c.n = y[0] * y[2] * y[3];
  c.k = w[1] * w[2] * w[3];
}

void setAttentionShape(OpCost &c, mlir::RankedTensorType q,
                       mlir::RankedTensorType k, AttentionLayout layout,
                       bool backward, bool bf16) {
  llvm::ArrayRef<int64_t> qs = q.getShape(), ks = k.getShape();
  const size_t seq = layout.sequenceMajor ? 3 : 2;
  const bool causal = layout.causal;
  c.matmul = true;
  c.bf16 = bf16;
  c.m = qs[qs.size() - seq];
  c.n = ks[ks.size() - seq];
  c.k = qs.back();
  c.batch = c.m > 0 && c.k > 0 ? q.getNumElements() / (c.m * c.k) : 1;
  c.attention = {
      c.batch, c.m, c.n, c.k, causal, backward, layout.sequenceMajor};
}

} // namespace whale::perf
