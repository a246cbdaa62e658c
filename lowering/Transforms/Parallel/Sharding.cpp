//===- Sharding.cpp - -whale-sharding -------------------------------------===//
//
// Tensor parallelism: rewrites the ops of split TaskGraphs to run on parts
// of their values over shard groups of `shards` ranks, inserting the shard
// ops of WhaleShardOps.td where a value's layout changes.
//
// Every value of a split stage has a layout over the group: whole (every
// rank holds it all), part(d) (rank i holds part i of dimension d) or
// partial (every rank holds a term of a sum). The rank's own rows of the
// batch ("home rows") are part(0) of the group's rows, so a replicated
// TaskGraph's values enter a split one as part(0) and leave it so: these
// are the bridges, and a gather that the next TaskGraph would split again
// in the same dimension is never made (gather + partition fuse). The
// stages split over groups of one size are rewritten together: rank i of
// a group hands on to rank i of the next stage's, so a split TaskGraph of
// a later stage reads the earlier one's parts as they are, sent and
// received as parts.
//
// Each op has sharding patterns: what layouts its operands need and what
// its result gets, declared by the op (ShardingOpInterface,
// dialects/Whale/IR/WhaleSharding.cpp); an op without them runs whole.
// Among those that apply, the pass takes the one that moves the fewest
// bytes, forward and backward, counting the conversions of its operands,
// the gradient sums of whole values its parts read (fanout), and the sum
// a partial result needs; `matmul=` forces one of
// the matmul patterns for tests and experiments. Each op's choice, with
// the costs compared, is recorded on its TaskGraph for `whale plan`.
//
// The model must be elaborated at its micro-batch (the rank's rows), or
// at its shard group's rows of one.
//
// Shared rows (split_rows = "whole", plan `row_group`): the ranks of a
// group read the same rows (Megatron-LM's layout), so no value holds rows
// in parts: home is whole, a split TaskGraph's inputs are fanned out to
// its parts, and its outputs are gathered or summed back whole. The loss
// is then each rank's own rows' mean: no group share to scale by.
//
// Uneven shards: when the plan gives the group `shard_weights` (its
// devices differ in speed), every split dimension is cut in sum(weights)
// units and rank i takes weights[i] of them (runtime/core/Parts.h), its rows
// included. The program is built for one rank's weight (`shard_weight`,
// elaborated at that rank's rows), so its parts have static shapes; the
// runtime finds each part's place from the weights the shard ops carry.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"
#include "lowering/Plan.h"

#include "llvm/ADT/TypeSwitch.h"

#include <map>

namespace whale {
#define GEN_PASS_DEF_WHALESHARDING
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

using sharding::Layout;
using sharding::Pattern;

class RuleContext;

/// What the pass knows of a value of the original model.
struct Info {
  Value local;   ///< the rewritten value, or a parameter itself
  Layout layout; ///< its layout over the shard group
};

class StageSharder {
  friend class RuleContext;

public:
  StageSharder(func::FuncOp fn, ArrayRef<int64_t> stages, int64_t shards,
               int64_t micro, StringRef force, ArrayRef<int64_t> weights,
               int64_t own, double canonicalRows, bool wholeRows)
      : fn(fn), stages(stages), c(shards), micro(micro), force(force),
        b(fn.getContext()), weights(weights), own(weights.empty() ? 1 : own),
        units(weights.empty() ? shards : 0), canonicalRows(canonicalRows),
        wholeRows(wholeRows) {
    for (int64_t w : weights)
      units += w;
  }

  LogicalResult run();

private:
  // Facts about original values.
  void analyze();
  bool rows(Value v) const { return rowsAxis.contains(v); }
  bool grad(Value v) const { return gradOf.contains(v); }
  RankedTensorType logical(Value v) const;
  RankedTensorType localType(Value v, Layout l) const;
  bool fits(Value v, Layout l) const;
  /// Bytes of `v` in layout `l` as every rank of the group counts them: a
  /// part is an equal share whatever this rank's weight, so the ranks of an
  /// uneven group, each building its own program, compare the same costs
  /// and choose the same pattern (else they would call different
  /// collectives).
  /// Likewise the shard groups of a stage, whose shares of the batch differ
  /// on unequal devices, count a value of rows at the stage's mean rows per
  /// group: their parameters' layouts must agree, since the groups sum
  /// their gradients part by part.
  int64_t bytes(Value v, Layout l) const {
    double whole = static_cast<double>(tensorBytes(logical(v)));
    // The group's rows of a micro-batch are micro x units / own (a row
    // dimension may hold several entries a row, as a mixture's slots do).
    if (rows(v) && canonicalRows > 0)
      whole = whole * canonicalRows * static_cast<double>(own) /
              static_cast<double>(micro * units);
    int64_t counted = static_cast<int64_t>(whole);
    if (l.kind == Layout::Shared)
      return counted / l.parts;
    return l.kind == Layout::Part ? counted / c : counted;
  }

  // Layouts of operands as the pass sees them.
  Value source(Value v) const { return plan::throughYields(v); }
  bool isSplit(Operation *op) const;
  Layout layoutOf(Value v) const;
  Layout home(Value v) const {
    return rows(v) ? Layout::part(rowsAxis.lookup(v)) : Layout::whole();
  }
  int64_t convertCost(Value v, Layout to) const;
  /// `operand` in layout `to`, as a value where it is defined (another
  /// TaskGraph's, not yet exported to `user`'s).
  Value convertedValue(Value operand, Layout to, Operation *user);
  Value materialize(Value operand, Layout to, Operation *user) {
    return exportTo(convertedValue(operand, to, user), user);
  }
  /// `operand` whole, read by parts (a fanout in `user`'s TaskGraph when
  /// it needs a gradient), as a value where it is defined.
  Value fanout(Value operand, Operation *user);
  Value exportTo(Value inner, Operation *user);

  // Patterns.
  SmallVector<Pattern> patterns(Operation *op);
  LogicalResult rewrite(Operation *op);
  void foldShardedParams();

  func::FuncOp fn;
  /// The stages split over groups of c: rank i of a group hands its parts
  /// to rank i of the next stage's group (the same replica), so parts pass
  /// between these stages as they are.
  SmallVector<int64_t> stages;
  int64_t c, micro;
  bool ownsStage(int64_t s) const { return llvm::is_contained(stages, s); }
  std::string force;
  OpBuilder b;
  /// Values that hold the rank's rows of the batch, and the dimension that
  /// holds them (0, unless a transpose moved it).
  DenseMap<Value, int64_t> rowsAxis;
  DenseSet<Value> gradOf;
  DenseMap<Value, Info> info;
  // TaskGraphs by position: exportTo rebuilds them, positions stay.
  DenseMap<Operation *, int64_t> tgIds;
  int64_t tgId(Operation *op) const {
    auto tg = dyn_cast<TaskGraphOp>(op);
    return tgIds.lookup(tg ? tg : op->getParentOfType<TaskGraphOp>());
  }
  DenseMap<std::pair<Value, int64_t>, Value> converted;
  DenseMap<std::tuple<Value, int64_t, int64_t>, Value> convertedAt;
  DenseMap<std::pair<Value, int64_t>, Value> fanned;
  DenseMap<Value, unsigned> exported; ///< inner value -> its yield position
  DenseMap<int64_t, SmallVector<Attribute>> choices, bridges;
  /// Uneven shards: the group's weights (empty: equal parts), this rank's,
  /// and the units a split dimension is cut in.
  SmallVector<int64_t> weights;
  int64_t own, units;
  /// The rows of a micro-batch per shard group that costs count with (the
  /// stage's mean; 0: this group's own).
  double canonicalRows;
  /// The group's ranks share their rows: no value holds them in parts.
  bool wholeRows;
  DenseI64ArrayAttr weightsAttr() {
    return weights.empty() ? DenseI64ArrayAttr()
                           : b.getDenseI64ArrayAttr(weights);
  }
};

RankedTensorType StageSharder::logical(Value v) const {
  auto t = cast<RankedTensorType>(v.getType());
  if (!rows(v))
    return t;
  SmallVector<int64_t> shape(t.getShape());
  int64_t axis = rowsAxis.lookup(v);
  shape[axis] = shape[axis] * units / own;
  return RankedTensorType::get(shape, t.getElementType());
}

RankedTensorType StageSharder::localType(Value v, Layout l) const {
  RankedTensorType t = logical(v);
  if (l.kind != Layout::Part && l.kind != Layout::Shared)
    return t;
  SmallVector<int64_t> shape(t.getShape());
  if (l.kind == Layout::Shared)
    shape[l.axis] /= l.parts;
  else
    shape[l.axis] = shape[l.axis] / units * own;
  return RankedTensorType::get(shape, t.getElementType());
}

bool StageSharder::fits(Value v, Layout l) const {
  if (l.kind == Layout::Partial)
    return isa<FloatType>(cast<RankedTensorType>(v.getType()).getElementType());
  if (l.kind == Layout::Shared) {
    // Equal parts only: an uneven group's ranks hold shares of other sizes.
    RankedTensorType t = logical(v);
    return weights.empty() && l.parts > 0 && l.parts < c && c % l.parts == 0 &&
           l.axis >= 0 && l.axis < t.getRank() &&
           t.getDimSize(l.axis) % l.parts == 0;
  }
  if (l.kind != Layout::Part)
    return true;
  RankedTensorType t = logical(v);
  return l.axis >= 0 && l.axis < t.getRank() &&
         t.getDimSize(l.axis) % units == 0;
}

bool StageSharder::isSplit(Operation *op) const {
  auto tg = op ? op->getParentOfType<TaskGraphOp>() : TaskGraphOp();
  return tg && tg->getAttrOfType<IntegerAttr>("shards") &&
         ownsStage(plan::stageOf(op->getResult(0)));
}

void StageSharder::analyze() {
  if (!wholeRows)
    for (BlockArgument a : fn.getArguments())
      rowsAxis[a] = 0;
  fn.walk([&](Operation *op) {
    if (isa<TaskGraphOp, YieldOp, func::ReturnOp>(op))
      return;
    bool anyRows = false, anyGrad = isa<ParamOp>(op);
    for (Value v : op->getOperands()) {
      v = source(v);
      anyRows |= rows(v);
      anyGrad |= grad(v);
    }
    for (Value r : op->getResults()) {
      auto t = cast<RankedTensorType>(r.getType());
      // A transpose takes the rows where its permutation sends their
      // dimension; an op shaped like an operand whose rows a transpose
      // moved keeps them where they are; other ops keep them in dimension
      // 0 unless they reduce it away.
      int64_t axis = 0;
      for (Value v : op->getOperands())
        if (rows(source(v)) && v.getType() == r.getType())
          axis = rowsAxis.lookup(source(v));
      if (auto tr = dyn_cast<TransposeOp>(op)) {
        Value in = source(tr.getOperand());
        axis = -1;
        if (rows(in))
          for (auto [e, from] : llvm::enumerate(tr.getPermutation()))
            if (from == rowsAxis.lookup(in))
              axis = static_cast<int64_t>(e);
      } else if (auto mm = dyn_cast<MatmulOp>(op);
                 mm && rows(source(mm.getLhs()))) {
        // The lhs's rows stay rows of the product, a batch dimension where
        // they were (a mixture's slots [E, N, D] keep theirs in N).
        int64_t lhsRank = mm.getLhs().getType().getRank();
        int64_t from = rowsAxis.lookup(source(mm.getLhs()));
        int64_t m = mm.getTransposeLhs() ? lhsRank - 1 : lhsRank - 2;
        axis = from == m            ? t.getRank() - 2
               : from < lhsRank - 2 ? from + t.getRank() - lhsRank
                                    : -1;
      } else if (isa<MoeDispatchOp>(op)) {
        // Slots [E, G * C, D]: each group's C slots of an expert sit
        // together, so the groups' rows are dimension 1.
        axis = 1;
      } else if (isa<MoeCombineOp>(op)) {
        // Back to the tokens [G, S, D], whatever the slots' shape is.
        axis = 0;
      } else if (auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes")) {
        if (llvm::is_contained(axes.asArrayRef(), 0))
          axis = -1;
      }
      if (anyRows && axis >= 0 && axis < t.getRank() &&
          t.getDimSize(axis) % micro == 0)
        rowsAxis[r] = axis;
      if (anyGrad && isa<FloatType>(t.getElementType()))
        gradOf.insert(r);
    }
  });
}

Layout StageSharder::layoutOf(Value v) const {
  v = source(v);
  auto it = info.find(v);
  return it == info.end() ? home(v) : it->second.layout;
}

int64_t StageSharder::convertCost(Value v, Layout to) const {
  Layout from = layoutOf(v);
  if (from == to)
    return 0;
  Value src = source(v);
  bool needsGrad = grad(src) && !src.getDefiningOp<ParamOp>();
  int64_t cost = 0;
  // One part for another in equal parts: an all-to-all (and the gradient
  // back the same way). A gather counts here as the part a rank hands in,
  // which reaches c - 1 ranks; an all-to-all's chunks each reach one, so a
  // rank receives 1/c of what a gather brings it: it counts as part / c.
  if (from.kind == Layout::Part && to.kind == Layout::Part) {
    int64_t moved = bytes(src, from) / c;
    return needsGrad ? 2 * moved : moved;
  }
  if (from.kind == Layout::Partial) {
    cost += bytes(src, from);
    from = Layout::whole();
  } else if (from.kind == Layout::Part && !(to == from)) {
    cost += bytes(src, from); // gathered
    from = Layout::whole();
  }
  if ((to.kind == Layout::Part || to.kind == Layout::Shared) && needsGrad)
    cost += bytes(src, to); // its gradient is gathered back
  return cost;
}

/// A value defined in a TaskGraph, visible to `user` in another one: the
/// TaskGraph yields it (once) and the user reads that result.
Value StageSharder::exportTo(Value inner, Operation *user) {
  Operation *def = inner.getDefiningOp();
  auto from = def ? def->getParentOfType<TaskGraphOp>() : TaskGraphOp();
  if (!from || from == user->getParentOfType<TaskGraphOp>())
    return inner;
  if (auto it = exported.find(inner); it != exported.end())
    return from->getResult(it->second);
  Operation *yield = from.getBody().front().getTerminator();
  unsigned at = yield->getNumOperands();
  yield->insertOperands(at, inner);
  SmallVector<Type> types(from->getResultTypes());
  types.push_back(inner.getType());
  b.setInsertionPoint(from);
  OperationState st(from.getLoc(), from->getName());
  st.addTypes(types);
  st.addAttributes(from->getAttrs());
  st.addRegion();
  Operation *rebuilt = b.create(st);
  rebuilt->getRegion(0).takeBody(from->getRegion(0));
  for (auto [o, n] : llvm::zip(from->getResults(), rebuilt->getResults()))
    o.replaceAllUsesWith(n);
  tgIds[rebuilt] = tgIds.lookup(from);
  tgIds.erase(from);
  from->erase();
  exported[inner] = at;
  return rebuilt->getResult(at);
}

Value StageSharder::convertedValue(Value operand, Layout to, Operation *user) {
  Value src = source(operand);
  Layout from = layoutOf(operand);
  auto it = info.find(src);
  bool inside = it != info.end();
  Value have = inside ? it->second.local : operand;
  if (from == to)
    return have;
  // Conversions of a rewritten value follow its definition (so every later
  // reader may share them); those of a home value open the reader's op.
  Value &slot = inside ? converted[{src, to.key()}]
                       : convertedAt[{operand, to.key(), tgId(user)}];
  if (!slot) {
    if (inside)
      b.setInsertionPointAfterValue(have);
    else
      b.setInsertionPoint(user);
    Location loc = user->getLoc();
    int64_t at = tgId(b.getInsertionBlock()->getParentOp());
    auto note = [&](StringRef what) {
      std::string s = what.str() + " " + from.str() + " -> " + to.str() + " " +
                      std::to_string(tensorBytes(have.getType())) + " B";
      if (auto p = src.getDefiningOp<ParamOp>())
        s += " (" + p.getName().str() + ")";
      bridges[at].push_back(StringAttr::get(fn.getContext(), s));
    };
    Value v = have;
    if (from.kind == Layout::Part && to.kind == Layout::Part) {
      note("all_to_all");
      slot = AllToAllOp::create(b, loc, localType(src, to), v, to.axis,
                                from.axis, c, weightsAttr());
      return slot;
    }
    if (from.kind == Layout::Partial) {
      note("shard_sum");
      v = ShardSumOp::create(b, loc, v, c);
      from = Layout::whole();
    }
    if (from.kind == Layout::Part) {
      note("all_gather");
      v = AllGatherOp::create(b, loc, localType(src, Layout::whole()), v,
                              from.axis, c, weightsAttr());
      from = Layout::whole();
    }
    if (to.kind == Layout::Part) {
      if (!src.getDefiningOp<ParamOp>())
        note("shard_slice");
      v = ShardSliceOp::create(b, loc, localType(src, to), v, to.axis, c,
                               weightsAttr(), IntegerAttr());
    } else if (to.kind == Layout::Shared) {
      note("shard_slice");
      v = ShardSliceOp::create(b, loc, localType(src, to), v, to.axis, c,
                               DenseI64ArrayAttr(),
                               b.getI64IntegerAttr(to.parts));
    }
    slot = v;
  }
  return slot;
}

Value StageSharder::fanout(Value operand, Operation *user) {
  // Read before materializing: exporting the value rebuilds its TaskGraph,
  // and `operand` may be one of the results that go with the old one.
  Value src = source(operand);
  Value whole = convertedValue(operand, Layout::whole(), user);
  if (!grad(src))
    return whole;
  Value &slot = fanned[{src, tgId(user)}];
  if (!slot) {
    Value visible = exportTo(whole, user);
    b.setInsertionPoint(user);
    slot = FanoutOp::create(b, user->getLoc(), visible, c);
  }
  return slot;
}

/// What the ops' sharding rules (ShardingOpInterface) ask of the pass,
/// and the patterns they offer, kept where every layout fits.
class RuleContext : public sharding::Context {
public:
  RuleContext(const StageSharder &s, Operation *op) : s(s), op(op) {}
  SmallVector<Pattern> patterns;

  Layout layoutOf(Value v) const override { return s.layoutOf(v); }
  RankedTensorType logicalType(Value v) const override {
    return s.logical(s.source(v));
  }
  int64_t groupSize() const override { return s.c; }
  int64_t units() const override { return s.units; }
  bool unevenShards() const override { return !s.weights.empty(); }
  StringRef forcedMatmul() const override { return s.force; }
  bool wholeRows() const override { return s.wholeRows; }
  std::optional<int64_t> rowsAxisOf(Value v) const override {
    v = s.source(v);
    if (!s.rows(v))
      return std::nullopt;
    return s.rowsAxis.lookup(v);
  }
  bool isParameter(Value v) const override {
    return static_cast<bool>(s.source(v).getDefiningOp<ParamOp>());
  }
  void add(Pattern p) override {
    const unsigned n = op->getNumOperands();
    if (p.fanout.empty())
      p.fanout.assign(n, false);
    if (p.ins.size() != n || p.fanout.size() != n)
      return;
    for (unsigned i = 0; i < n; ++i) {
      if (!s.fits(s.source(op->getOperand(i)), p.ins[i]))
        return;
      // Terms of a sum stay terms; nothing whole becomes one.
      if (p.ins[i].kind == Layout::Partial &&
          s.layoutOf(op->getOperand(i)).kind != Layout::Partial)
        return;
    }
    if (!s.fits(op->getResult(0), p.out))
      return;
    patterns.push_back(std::move(p));
  }

private:
  const StageSharder &s;
  Operation *op;
};

SmallVector<Pattern> StageSharder::patterns(Operation *op) {
  RuleContext ctx(*this, op);
  if (auto rule = dyn_cast<ShardingOpInterface>(op))
    rule.getShardingPatterns(ctx);
  else
    ctx.addAllWhole(op);
  SmallVector<Pattern> ps = std::move(ctx.patterns);
  const unsigned n = op->getNumOperands();
  Value result = op->getResult(0);
  for (Pattern &p : ps) {
    for (unsigned i = 0; i < n; ++i) {
      Value v = op->getOperand(i);
      p.cost += convertCost(v, p.ins[i]);
      if (p.fanout[i] && p.ins[i].kind == Layout::Whole && grad(source(v)) &&
          p.out.kind != Layout::Whole)
        p.cost += bytes(source(v), Layout::whole());
    }
    if (p.out.kind == Layout::Partial)
      p.cost += bytes(result, p.out);
  }
  return ps;
}

LogicalResult StageSharder::rewrite(Operation *op) {
  SmallVector<Pattern> ps = patterns(op);
  if (auto rule = dyn_cast<ShardingOpInterface>(op); ps.empty() && rule)
    if (std::string why = rule.getShardingRefusal(); !why.empty())
      return op->emitOpError(why);
  if (ps.empty())
    return op->emitOpError("has no sharding pattern for its operands' "
                           "layouts over ")
           << c << " shards (a dimension that does not divide?)";
  const Pattern *best = &ps.front();
  for (const Pattern &p : ps)
    if (p.cost < best->cost)
      best = &p;
  SmallVector<Value> inner;
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    bool fan = best->fanout[i] && best->out.kind != Layout::Whole;
    inner.push_back(fan ? fanout(v, op) : convertedValue(v, best->ins[i], op));
  }
  // Exporting one operand rebuilds the TaskGraph it comes from, and with it
  // the results an earlier operand was read from: export them all, then
  // read them.
  for (Value v : inner)
    exportTo(v, op);
  SmallVector<Value> operands;
  for (Value v : inner)
    operands.push_back(exportTo(v, op));
  b.setInsertionPoint(op);
  Value result = op->getResult(0);
  Type type = localType(result, best->out);
  Operation *local;
  if (best->name == "sharded_classes") {
    local = ShardedCrossEntropyOp::create(b, op->getLoc(), type, operands[0],
                                          operands[1], c, weightsAttr());
  } else {
    local = b.clone(*op);
    local->setOperands(operands);
    local->getResult(0).setType(type);
    // A rank convolves its share of the channel groups.
    if (auto conv = dyn_cast<Conv2dOp>(local); conv && best->name == "groups")
      conv.setGroups(conv.getGroups() / c);
  }
  Value out = local->getResult(0);
  // A mean over a split axis is a mean of each part: its share (1/c, or
  // own/units when uneven) of the whole's.
  if (isa<ReduceMeanOp>(op) && best->out.kind == Layout::Partial &&
      layoutOf(op->getOperand(0)).kind == Layout::Part) {
    b.setInsertionPointAfter(local);
    Value scale = ConstantOp::create(b, op->getLoc(), type,
                                     b.getF64FloatAttr(double(own) / units));
    out = MulOp::create(b, op->getLoc(), type, out, scale);
  }
  info[result] = {out, best->out};
  NamedAttrList costs;
  for (const Pattern &p : ps)
    if (!costs.get(p.name) ||
        cast<IntegerAttr>(costs.get(p.name)).getInt() > p.cost)
      costs.set(p.name, b.getI64IntegerAttr(p.cost));
  std::string where;
  llvm::raw_string_ostream os(where);
  os << op->getName().stripDialect() << " @ " << op->getLoc();
  choices[tgId(op)].push_back(b.getDictionaryAttr(
      {b.getNamedAttr("op", b.getStringAttr(os.str())),
       b.getNamedAttr("pattern", b.getStringAttr(best->name)),
       b.getNamedAttr("result", b.getStringAttr(best->out.str())),
       b.getNamedAttr("costs", costs.getDictionary(b.getContext()))}));
  return success();
}

/// A parameter read only through parts of one axis becomes that part: each
/// rank keeps and updates only its own.
void StageSharder::foldShardedParams() {
  SmallVector<ParamOp> params;
  fn.walk([&](ParamOp p) {
    if (isSplit(p))
      params.push_back(p);
  });
  for (ParamOp p : params) {
    if (p.getResult().use_empty())
      continue;
    ShardSliceOp first;
    bool allSlices = llvm::all_of(p->getUsers(), [&](Operation *u) {
      auto s = dyn_cast<ShardSliceOp>(u);
      if (!s || s.getParts())
        return false; // a part several ranks hold is no rank's own shard
      if (!first)
        first = s;
      return s.getAxis() == first.getAxis();
    });
    if (!allSlices)
      continue;
    b.setInsertionPoint(p);
    SmallVector<int64_t> shard = {static_cast<int64_t>(first.getAxis()), c};
    if (!weights.empty())
      shard.push_back(p.getType().getDimSize(first.getAxis()));
    auto part = ParamOp::create(
        b, p.getLoc(), first.getType(), p.getNameAttr(), p.getInitAttr(),
        p.getInitArgsAttr(), b.getDenseI64ArrayAttr(shard), weightsAttr(),
        p.getFrozenAttr(), IntegerAttr(), StringAttr(), IntegerAttr());
    for (Operation *u : llvm::make_early_inc_range(p->getUsers())) {
      u->getResult(0).replaceAllUsesWith(part.getResult());
      u->erase();
    }
    p->erase();
  }
}

LogicalResult StageSharder::run() {
  analyze();
  for (auto [i, tg] : llvm::enumerate(plan::taskGraphs(fn)))
    tgIds[tg] = i;
  SmallVector<TaskGraphOp> split;
  for (TaskGraphOp tg : plan::taskGraphs(fn))
    if (tg->getAttrOfType<IntegerAttr>("shards") &&
        ownsStage(plan::stageOf(tg)))
      split.push_back(tg);
  // Collected first: rewriting may rebuild TaskGraphs (exportTo).
  SmallVector<Operation *> ops;
  for (TaskGraphOp tg : split)
    for (Operation &op : tg.getBody().front().without_terminator())
      ops.push_back(&op);
  SmallVector<Operation *> originals;
  for (Operation *op : ops) {
    if (auto p = dyn_cast<ParamOp>(op)) {
      info[p.getResult()] = {p.getResult(), Layout::whole()};
      continue;
    }
    if (op->getNumResults() != 1 && !isa<BatchNormOp>(op))
      return op->emitOpError("has no sharding pattern (several results)");
    if (failed(rewrite(op)))
      return failure();
    originals.push_back(op);
  }
  DenseSet<Operation *> replaced(originals.begin(), originals.end());
  // Each TaskGraph hands on its values in home layout (the rank's rows):
  // what a replicated TaskGraph, a stage of other groups or the loss reads.
  for (TaskGraphOp tg : plan::taskGraphs(fn)) {
    if (!tg->getAttrOfType<IntegerAttr>("shards") ||
        !ownsStage(plan::stageOf(tg)))
      continue;
    Operation *yield = tg.getBody().front().getTerminator();
    for (OpOperand &o : yield->getOpOperands()) {
      Value src = source(o.get());
      if (!info.contains(src) || info[src].local == src)
        continue;
      // A result nobody reads (split TaskGraphs, of this stage or a later
      // one of the same groups, read the parts themselves) hands on the
      // part as it is: no bridge.
      Value result = tg->getResult(o.getOperandNumber());
      if (llvm::all_of(result.getUsers(),
                       [&](Operation *u) { return replaced.contains(u); })) {
        o.set(info[src].local);
        result.setType(info[src].local.getType());
        continue;
      }
      o.set(materialize(o.get(), home(src), yield));
    }
  }
  for (Operation *op : llvm::reverse(originals)) {
    op->dropAllUses();
    op->erase();
  }
  foldShardedParams();
  for (auto [i, tg] : llvm::enumerate(plan::taskGraphs(fn))) {
    if (auto it = choices.find(i); it != choices.end())
      tg->setAttr("sharding", b.getArrayAttr(it->second));
    if (auto it = bridges.find(i); it != bridges.end())
      tg->setAttr("bridges", b.getArrayAttr(it->second));
  }
  return success();
}

struct ShardingPass : public whale::impl::WhaleShardingBase<ShardingPass> {
  using Base::Base;

  void runOnOperation() override {
    if (matmul != "auto" && matmul != "column" && matmul != "row" &&
        matmul != "replicated") {
      getOperation().emitError("-whale-sharding: matmul must be auto, "
                               "column, row or replicated, not '")
          << matmul << "'";
      return signalPassFailure();
    }
    bool ok = plan::forEachModel(
        getOperation(), [&](func::FuncOp fn) -> LogicalResult {
          const ModelPlan p = ModelPlan::of(fn);
          std::optional<ArrayRef<int64_t>> shards = p.shards();
          if (!shards)
            return success();
          int64_t micro = p.microBatch().value_or(0);
          // The stages of each group size, sharded together.
          std::map<int64_t, SmallVector<int64_t>> stagesBy;
          for (auto [s, c] : llvm::enumerate(*shards))
            if (c >= 2)
              stagesBy[c].push_back(static_cast<int64_t>(s));
          for (auto &[c, stages] : stagesBy) {
            if (micro < 1)
              return fn.emitOpError("is not planned for micro-batches; run "
                                    "-whale-pipeline first");

            std::string force = matmul;
            if (force == "auto")
              if (std::optional<SplitMatmul> m =
                      settingsOf(fn).getSplitMatmul())
                force = stringifySplitMatmul(*m).str();
            SmallVector<int64_t> weights;
            if (std::optional<ArrayRef<int64_t>> w = p.shardWeights())
              weights.assign(w->begin(), w->end());
            int64_t own = p.shardWeight().value_or(1);
            if (!weights.empty() &&
                (static_cast<int64_t>(weights.size()) != c ||
                 !llvm::is_contained(weights, own)))
              return fn.emitOpError("shard_weights ")
                     << weights.size() << " long, with this rank's weight "
                     << own << ", do not describe a shard group of " << c;
            // Rows are recognized by the micro-batch: the model is
            // elaborated at a rank's rows of one, or at its shard group's.
            // At other rows it was cut wrong (an op the verifier refused,
            // or whole rows gathered as parts).
            int64_t units = c;
            if (!weights.empty()) {
              units = 0;
              for (int64_t w : weights)
                units += w;
            }
            const int64_t groupRows =
                weights.empty() ? micro * c : micro * units / own;
            auto first =
                fn.getNumArguments()
                    ? dyn_cast<RankedTensorType>(fn.getArgumentTypes()[0])
                    : RankedTensorType();
            if (first && first.getRank() > 0 && first.getShape()[0] != micro &&
                first.getShape()[0] != groupRows)
              return fn.emitOpError("is elaborated at ")
                     << first.getShape()[0]
                     << " rows, but a rank of its plan computes " << micro
                     << " rows a micro-batch and its shard group " << groupRows
                     << ": the model is sharded from one elaborated at "
                        "either, as whale plan elaborates it";
            // The stage's mean rows per group and micro-batch, from the
            // replicas' local batches (every rank of a stage sees them all).
            double canonicalRows = 0;
            if (std::optional<ArrayRef<int64_t>> local = p.localBatches()) {
              int64_t total = 0;
              for (int64_t n : *local)
                total += n;
              int64_t groups = static_cast<int64_t>(local->size()) / c;
              int64_t m = p.microBatches().value_or(1);
              if (groups > 0 && m > 0)
                canonicalRows = double(total) / double(groups * m);
            }
            StageSharder sharder(fn, stages, c, micro, force, weights, own,
                                 canonicalRows, p.rowGroupOrOne() > 1);
            if (failed(sharder.run()))
              return failure();
          }
          // The loss is whole over a shard group (its rows' mean), so each
          // rank's backward starts from the group's share of the batch.
          auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
          Operation *def =
              plan::throughYields(ret.getOperand(0)).getDefiningOp();
          auto tg = def ? def->getParentOfType<TaskGraphOp>() : TaskGraphOp();
          auto c =
              tg ? tg->getAttrOfType<IntegerAttr>("shards") : IntegerAttr();
          if (c && p.rowGroupOrOne() == 1) {
            PlanUpdate update(fn);
            update.lossShards(c.getInt());
            // With uneven shards the group's rows are units/own of this rank's.
            if (std::optional<ArrayRef<int64_t>> w = p.shardWeights()) {
              int64_t units = 0;
              for (int64_t x : *w)
                units += x;
              update.lossScale(double(units) /
                               double(p.shardWeight().value_or(1)));
            }
            update.apply();
          }
          return success();
        });
    if (!ok)
      signalPassFailure();
  }
};

} // namespace
