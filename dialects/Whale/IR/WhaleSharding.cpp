//===- WhaleSharding.cpp - each op's sharding patterns --------------------===//
//
// The ShardingOpInterface of the ops that are not elementwise (those take
// their rule from their ODS class, ShardingOpInterface.cpp). Each rule
// offers what the layouts its operands have now make worth trying; the
// pass keeps the patterns that fit and takes the cheapest
// (lowering/Transforms/Parallel/Sharding.cpp).
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"

using namespace mlir;
using namespace whale;
using sharding::Context;
using sharding::Layout;

namespace {

int64_t rankOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getRank();
}

/// Sums and products: terms of a sum stay terms where both (a sum) or one
/// factor (a product; the divisor never) are.
void addPartialPatterns(Operation *op, Context &ctx, bool sum, bool divides) {
  const unsigned n = op->getNumOperands();
  bool anyPartial = llvm::any_of(op->getOperands(), [&](Value v) {
    return ctx.layoutOf(v).kind == Layout::Partial;
  });
  if (!anyPartial)
    return;
  if (sum) {
    ctx.add({"partial",
             SmallVector<Layout>(n, Layout::partial()),
             {},
             Layout::partial()});
    return;
  }
  // One factor partial, the other whole (read by the terms).
  for (unsigned i = 0; i < n; ++i) {
    if (divides && i == 1)
      continue;
    sharding::Pattern p{"partial", SmallVector<Layout>(n, Layout::whole()),
                        SmallVector<bool>(n, true), Layout::partial()};
    p.ins[i] = Layout::partial();
    p.fanout[i] = false;
    ctx.add(p);
  }
}

void binaryPatterns(Operation *op, Context &ctx, bool sum, bool divides) {
  sharding::addElementwiseSplits(op, ctx);
  addPartialPatterns(op, ctx, sum, divides);
  ctx.addAllWhole(op);
}

/// An op that works on its operand `index` alone along some dimensions:
/// split in any other dimension it is split in now, or whole.
void splitUnless(Operation *op, Context &ctx, unsigned index,
                 llvm::function_ref<bool(int64_t)> keeps) {
  Layout l = ctx.layoutOf(op->getOperand(index));
  if (l.kind == Layout::Part && keeps(l.axis))
    ctx.add({"split", {l}, {}, l});
  ctx.addAllWhole(op);
}

} // namespace

void AddOp::getShardingPatterns(Context &ctx) {
  binaryPatterns(*this, ctx, /*sum=*/true, /*divides=*/false);
}
void SubOp::getShardingPatterns(Context &ctx) {
  binaryPatterns(*this, ctx, /*sum=*/true, /*divides=*/false);
}
void MulOp::getShardingPatterns(Context &ctx) {
  binaryPatterns(*this, ctx, /*sum=*/false, /*divides=*/false);
}
void DivOp::getShardingPatterns(Context &ctx) {
  binaryPatterns(*this, ctx, /*sum=*/false, /*divides=*/true);
}

void CastOp::getShardingPatterns(Context &ctx) {
  sharding::addElementwiseSplits(*this, ctx);
  ctx.addAllWhole(*this);
}

void CausalMaskOp::getShardingPatterns(Context &ctx) {
  const int64_t rank = getType().getRank();
  splitUnless(*this, ctx, 0, [&](int64_t d) { return d < rank - 2; });
}

void AttentionOp::getShardingPatterns(Context &ctx) {
  // Heads (or the batch) split alike on query, key and value: each rank
  // attends over its own, and nothing moves. Any axis but T and the width:
  // under sequence_major the heads' axis follows T's.
  const int64_t rank = rankOf((*this)->getResult(0));
  Layout l = ctx.layoutOf(getOperand(0));
  if (l.kind == Layout::Part && l.axis != getSequenceAxis() &&
      l.axis < rank - 1)
    ctx.add({"split", {l, l, l}, {}, l});
  // Grouped-query attention over more ranks than key heads: query heads
  // split, and each rank reads the one key and value head they share
  // (held by ranks / key heads ranks; its gradient adds theirs). Offered
  // before the whole pattern, so a tie in bytes goes to it: attending
  // whole repeats every head's attention on every rank.
  const int64_t heads = getSequenceMajor() ? rank - 2 : rank - 3;
  const int64_t keyHeads = ctx.logicalType(getKey()).getDimSize(heads);
  if (l.kind == Layout::Part && l.axis == heads && !ctx.unevenShards() &&
      keyHeads < ctx.groupSize() && ctx.groupSize() % keyHeads == 0) {
    Layout shared = Layout::shared(heads, keyHeads);
    ctx.add({"shared_keys", {l, shared, shared}, {}, l});
  }
  ctx.addAllWhole(*this);
}

void SoftmaxOp::getShardingPatterns(Context &ctx) {
  const int64_t axis = resolveAxis(getAxis(), getType().getRank());
  splitUnless(*this, ctx, 0, [&](int64_t d) { return d != axis; });
}

void LayerNormOp::getShardingPatterns(Context &ctx) {
  const int64_t rank = rankOf((*this)->getResult(0));
  Layout l = ctx.layoutOf(getOperand(0));
  if (l.kind == Layout::Part && l.axis != rank - 1)
    ctx.add({"split",
             {l, Layout::whole(), Layout::whole()},
             {false, true, true},
             l});
  ctx.addAllWhole(*this);
}

// A position's turn depends on its place along T and pairs the halves of
// E: split along the axes before them.
void RopeOp::getShardingPatterns(Context &ctx) {
  const int64_t rank = rankOf((*this)->getResult(0));
  Layout l = ctx.layoutOf(getInput());
  // The position (a decoding step's) is one number, whole on every rank.
  if (l.kind == Layout::Part && l.axis < rank - 2)
    ctx.add(getPosition()
                ? sharding::Pattern{"split", {l, Layout::whole()}, {}, l}
                : sharding::Pattern{"split", {l}, {}, l});
  ctx.addAllWhole(*this);
}

// Each row is normalized whole: split along any axis but the last, the
// weight whole on every rank.
void RmsNormOp::getShardingPatterns(Context &ctx) {
  const int64_t rank = rankOf((*this)->getResult(0));
  Layout l = ctx.layoutOf(getOperand(0));
  if (l.kind == Layout::Part && l.axis != rank - 1)
    ctx.add({"split", {l, Layout::whole()}, {false, true}, l});
  ctx.addAllWhole(*this);
}

void TransposeOp::getShardingPatterns(Context &ctx) {
  const int64_t rank = rankOf((*this)->getResult(0));
  Layout l = ctx.layoutOf(getOperand());
  ArrayRef<int64_t> perm = getPermutation();
  if (l.kind == Layout::Part)
    for (int64_t e = 0; e < rank; ++e)
      if (perm[e] == l.axis)
        ctx.add({"split", {l}, {}, Layout::part(e)});
  if (l.kind == Layout::Partial)
    ctx.add({"partial", {l}, {}, l});
  ctx.addAllWhole(*this);
}

void ReshapeOp::getShardingPatterns(Context &ctx) {
  Layout l = ctx.layoutOf(getOperand());
  RankedTensorType in = ctx.logicalType(getOperand());
  RankedTensorType out = ctx.logicalType(getResult());
  if (l.kind == Layout::Part) {
    // Splitting dimension d in blocks (the group's ranks, or the units of
    // uneven shards) is splitting output dimension e in as many when the
    // dimensions before them hold as many elements and the leading one of
    // the two divides by the blocks.
    int64_t before = 1;
    for (int64_t d = 0; d < l.axis; ++d)
      before *= in.getDimSize(d);
    int64_t outBefore = 1;
    for (int64_t e = 0; e < out.getRank(); ++e) {
      if (outBefore == before && out.getDimSize(e) % ctx.units() == 0 &&
          (in.getDimSize(l.axis) % out.getDimSize(e) == 0 ||
           out.getDimSize(e) % in.getDimSize(l.axis) == 0))
        ctx.add({"split", {l}, {}, Layout::part(e)});
      outBefore *= out.getDimSize(e);
    }
  }
  if (l.kind == Layout::Partial)
    ctx.add({"partial", {l}, {}, l});
  ctx.addAllWhole(*this);
}

void MatmulOp::getShardingPatterns(Context &ctx) {
  Value lhs = getLhs(), rhs = getRhs();
  const int64_t rank = rankOf((*this)->getResult(0));
  const int64_t rl = rankOf(lhs), rr = rankOf(rhs);
  const int64_t kL = getTransposeLhs() ? rl - 2 : rl - 1;
  const int64_t mL = getTransposeLhs() ? rl - 1 : rl - 2;
  const int64_t kR = getTransposeRhs() ? rr - 1 : rr - 2;
  const int64_t nR = getTransposeRhs() ? rr - 2 : rr - 1;
  Layout ll = ctx.layoutOf(lhs);
  const bool weight = rr == 2;
  StringRef force = ctx.forcedMatmul();
  auto forced = [&](StringRef name) {
    return !weight || force.empty() || force == "auto" || force == name;
  };
  if (forced("column"))
    ctx.add({"column",
             {Layout::whole(), Layout::part(nR)},
             {true, false},
             Layout::part(rank - 1)});
  if (forced("row"))
    ctx.add(
        {"row", {Layout::part(kL), Layout::part(kR)}, {}, Layout::partial()});
  // A weight of a split TaskGraph is split unless a test asks otherwise:
  // replicating it would trade bytes for duplicated work and memory, which
  // the byte count alone does not see. Stacked weights (a mixture's
  // experts) too.
  const bool stacked = rr > 2 && ctx.isParameter(rhs);
  if ((!weight && !stacked) || force == "replicated")
    ctx.addAllWhole(*this);
  if (!force.empty() && force != "auto" && weight)
    return;
  // The lhs's rows (or batch dimensions) split, the rhs read whole by every
  // part: data parallelism inside the group.
  if (ll.kind == Layout::Part && ll.axis != kL && (weight || ll.axis == mL)) {
    int64_t out = ll.axis == mL ? rank - 2 : ll.axis;
    ctx.add({"rows", {ll, Layout::whole()}, {false, true}, Layout::part(out)});
  }
  // Both split in the same batch dimension: attention's heads, or a
  // mixture's experts, whose stacked weights each rank keeps its share of
  // (the slots come to them).
  if (!weight && rl == rr)
    for (int64_t d = 0; d < rl - 2; ++d)
      ctx.add(
          {"batch", {Layout::part(d), Layout::part(d)}, {}, Layout::part(d)});
}

void CrossEntropyOp::getShardingPatterns(Context &ctx) {
  const int64_t rank = rankOf((*this)->getResult(0));
  Layout l = ctx.layoutOf(getOperand(0));
  ctx.add({"sharded_classes",
           {Layout::part(rank), Layout::whole()},
           {},
           Layout::whole()});
  if (l.kind == Layout::Part && l.axis < rank)
    ctx.add({"rows", {l, l}, {}, l});
  ctx.addAllWhole(*this);
}

namespace {

/// Reductions: split where the input is split in a dimension they keep;
/// a sum or mean over a split dimension leaves terms of a sum (a maximum
/// has no such pattern).
void reducePatterns(Operation *op, Context &ctx, bool linear) {
  auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
  const bool keep = op->hasAttr("keepdim");
  Layout l = ctx.layoutOf(op->getOperand(0));
  if (l.kind == Layout::Part) {
    if (!llvm::is_contained(axes, l.axis)) {
      int64_t e = l.axis;
      if (!keep)
        for (int64_t a : axes)
          e -= a < l.axis ? 1 : 0;
      ctx.add({"split", {l}, {}, Layout::part(e)});
    } else if (linear) {
      ctx.add({"partial", {l}, {}, Layout::partial()});
    }
  }
  if (l.kind == Layout::Partial && linear)
    ctx.add({"partial", {l}, {}, l});
  ctx.addAllWhole(op);
}

} // namespace

void ReduceSumOp::getShardingPatterns(Context &ctx) {
  reducePatterns(*this, ctx, /*linear=*/true);
}
void ReduceMeanOp::getShardingPatterns(Context &ctx) {
  reducePatterns(*this, ctx, /*linear=*/true);
}
void ReduceMaxOp::getShardingPatterns(Context &ctx) {
  reducePatterns(*this, ctx, /*linear=*/false);
}

void Conv2dOp::getShardingPatterns(Context &ctx) {
  Layout in = ctx.layoutOf(getInput());
  const int64_t c = ctx.groupSize();
  // The output channels split with the weight's (its first axis), the
  // image read whole by every part: a column split of the convolution's
  // implicit product.
  if (getGroups() == 1)
    ctx.add({"channels",
             {Layout::whole(), Layout::part(0)},
             {true, false},
             Layout::part(1)});
  // Grouped (depthwise) convolutions: whole groups of input and output
  // channels to each rank, nothing moved. Equal parts only: a rank's
  // groups are its share of them.
  const bool evenGroups = !ctx.unevenShards() && getGroups() % c == 0;
  if (getGroups() > 1 && evenGroups)
    ctx.add(
        {"groups", {Layout::part(1), Layout::part(0)}, {}, Layout::part(1)});
  // The images split (data parallelism inside the group), the weight read
  // whole by every part.
  if (in.kind == Layout::Part && in.axis == 0)
    ctx.add({"rows", {in, Layout::whole()}, {false, true}, in});
  // Groups the ranks cannot share evenly run whole.
  if (ctx.forcedMatmul() == "replicated" || (getGroups() > 1 && !evenGroups))
    ctx.addAllWhole(*this);
}

void Pool2dOp::getShardingPatterns(Context &ctx) {
  // Each plane pooled alone: any split but of its height and width.
  const int64_t rank = rankOf((*this)->getResult(0));
  splitUnless(*this, ctx, 0, [&](int64_t d) { return d < rank - 2; });
}

void DropoutOp::getShardingPatterns(Context &ctx) {
  // Rows draw by their place in the global batch, counted from the rank's
  // first row: each rank drops its own rows, or, where a group shares its
  // rows, all of them alike. Anything else (a value without the batch's
  // rows in dimension 0) has no pattern.
  if (ctx.wholeRows())
    ctx.addAllWhole(*this);
  else if (ctx.rowsAxisOf(getInput()) == 0)
    ctx.add({"rows", {Layout::part(0)}, {}, Layout::part(0)});
}

std::string DropoutOp::getShardingRefusal() {
  return "draws by the batch's rows, but under split its input has none in "
         "dimension 0 (drop before the split, or on a value of the rows)";
}

void BatchNormOp::getShardingPatterns(Context &) {}

std::string BatchNormOp::getShardingRefusal() {
  return "normalizes over the whole batch and is not split: put it in a "
         "replicate block (data parallelism syncs its statistics)";
}

void TopKOp::getShardingPatterns(Context &ctx) {
  // Each row chooses alone: any split but of the rows' entries.
  const int64_t rank = rankOf((*this)->getResult(0));
  splitUnless(*this, ctx, 0, [&](int64_t d) { return d < rank - 1; });
}

void OneHotOp::getShardingPatterns(Context &ctx) {
  splitUnless(*this, ctx, 0, [](int64_t) { return true; });
}

void MoeDispatchOp::getShardingPatterns(Context &ctx) {
  // Each rank routes its own groups into its share of every expert's slots
  // (groups never share slots): nothing moves here; the experts' product
  // takes the slots by expert.
  Layout l = ctx.layoutOf(getOperand(0));
  if (l.kind == Layout::Part && l.axis == 0)
    ctx.add({"groups",
             SmallVector<Layout>(getNumOperands(), l),
             {},
             Layout::part(1)});
  ctx.addAllWhole(*this);
}

void MoeCombineOp::getShardingPatterns(Context &ctx) {
  // The inverse: every expert's slots of the rank's own groups back to its
  // tokens.
  SmallVector<Layout> ins(getNumOperands(), Layout::part(0));
  ins[0] = Layout::part(1);
  ctx.add({"groups", ins, {}, Layout::part(0)});
  ctx.addAllWhole(*this);
}

void EmbeddingOp::getShardingPatterns(Context &ctx) {
  Layout l = ctx.layoutOf(getOperand(1));
  if (l.kind == Layout::Part)
    ctx.add({"rows", {Layout::whole(), l}, {true, false}, l});
  ctx.addAllWhole(*this);
}
