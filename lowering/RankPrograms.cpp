//===- RankPrograms.cpp - -whale-rank-programs ----------------------------===//
//
// Turns a planned model into one function per pipeline stage: the program
// every replica of that stage runs (ranks of one role share code). It runs
// the stage's schedule step by step:
//
//   F j  slice micro-batch j of its inputs, receive the values earlier
//        stages computed, run the stage's forward ops, send what later
//        stages read;
//   B j  receive the gradients of what it sent, run the backward of
//        micro-batch j's forward ops, send the gradients of what it
//        received, add the parameters' gradients to the running sums;
//
// Under an interleaved schedule a stage holds several model chunks, and a
// step runs one chunk's ops: values pass from chunk to chunk within the
// rank directly, and to other stages as messages. The gradients of a
// micro-batch gather over its backwards on every chunk.
//
// then all-reduces the gradients over the replicas (bucket by bucket),
// clips them over the stages, and updates its parameters. Values the forward
// of micro-batch j keeps for its backward live until that backward: the
// schedule decides how many micro-batches a stage holds at once.
//
// The model must be elaborated at its micro-batch: static shapes are the
// shapes one micro-batch has on one rank.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"
#include "lowering/Plan.h"
#include "lowering/Recompute.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Threading.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

#include <map>

namespace whale {
#define GEN_PASS_DEF_WHALERANKPROGRAMS
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

constexpr int64_t kMaxBoundary = 4096;

using plan::throughYields;

/// The most micro-batches of `chunk` whose forward a schedule has run and
/// whose backward it has not, at once.
int64_t heldBy(ScheduleAttr schedule, int64_t chunk) {
  int64_t now = 0, most = 0;
  for (const ScheduleStep &step : schedule.getSteps()) {
    if (step.chunk != chunk)
      continue;
    now += step.backward ? -1 : 1;
    most = std::max(most, now);
  }
  return std::max<int64_t>(1, most);
}

/// A message's tag: micro-batch, direction and which boundary value.
int64_t tagOf(int64_t microBatch, bool backward, int64_t index) {
  return (microBatch * 2 + (backward ? 1 : 0)) * kMaxBoundary + index;
}

class RankBuilder {
public:
  explicit RankBuilder(func::FuncOp model) : model(model) {}

  LogicalResult analyze();
  /// Stage `s`'s function, its signature and plan but no body yet, placed
  /// just after the model.
  func::FuncOp declare(int64_t s);
  /// Builds stage `s`'s program into `fn`. Reads the model and the
  /// analysis only, so stages build side by side.
  LogicalResult build(int64_t s, func::FuncOp fn);

private:
  /// The stages that read the boundary value `v` (analyze() records a
  /// reader with every boundary value). A lookup, not `readers[v]`: stages
  /// build side by side, so the table must not change under them.
  const llvm::SmallSetVector<int64_t, 4> &readersOf(Value v) const {
    auto it = readers.find(v);
    assert(it != readers.end() && "a boundary value without readers");
    return it->second;
  }
  /// Whether stage `s` reads the boundary value `v`, first on `chunk`: it
  /// receives it there, and sends back its gradient from that chunk's
  /// backward, the last of its readers' on the stage.
  bool readsFirstOn(Value v, int64_t s, int64_t chunk) const {
    auto it = firstChunk.find({v, s});
    return it != firstChunk.end() && it->second == chunk;
  }
  /// Where a stage and chunk stand in the pipeline: chunk 0 of every
  /// stage, then chunk 1 of every stage, and so on.
  int64_t positionOf(int64_t s, int64_t chunk) const {
    return chunk * stages + s;
  }

  func::FuncOp model;
  DictionaryAttr planAttr;
  int64_t stages = 1, replicas = 1, micro = 0, microBatches = 1, chunks = 1;
  double weight = 1;
  /// The loss's rows over this rank's: its shard group's (loss_shards, or
  /// loss_scale for uneven shards).
  double lossShards = 1;
  /// Consecutive replicas that read the same rows (split_rows = "whole"):
  /// they compute the same gradients of whole parameters and the same
  /// loss, which count once.
  int64_t rowGroup = 1;
  // Parameters of split TaskGraphs: their gradients are summed over the
  // ranks holding the same part (shard_peers), not all the replicas.
  llvm::StringMap<int64_t> shardedBy;
  Value loss;
  int64_t lossStage = 0, lossChunk = 0;
  // Per stage and chunk: its ops (no parameters, no yields); per stage its
  // parameters; in order.
  SmallVector<SmallVector<SmallVector<Operation *>>> ops;
  SmallVector<SmallVector<ParamOp>> params;
  SmallVector<ScheduleAttr> schedules;
  // Values one stage computes and later stages read, and who reads them.
  llvm::SetVector<Value> boundary;
  DenseMap<Value, llvm::SmallSetVector<int64_t, 4>> readers;
  /// (boundary value, reading stage) -> the first chunk there that reads it.
  DenseMap<std::pair<Value, int64_t>, int64_t> firstChunk;
  /// Activation recomputation (the config's `recompute`).
  bool recompute = false;

};


LogicalResult RankBuilder::analyze() {
  planAttr = plan::planOf(model);
  stages = plan::intOf(planAttr, "stages", 0);
  replicas = plan::intOf(planAttr, "replicas", 1);
  micro = plan::intOf(planAttr, "micro_batch", 0);
  microBatches = plan::intOf(planAttr, "micro_batches", 1);
  chunks = plan::intOf(planAttr, "chunks", 1);
  auto w = planAttr ? planAttr.getAs<FloatAttr>("grad_weight") : FloatAttr();
  if (!stages || !micro || !w)
    return model.emitOpError(
        "is not fully planned; run -whale-virtual-devices, "
        "-whale-pipeline and -whale-data-parallel first");
  weight = w.getValueAsDouble();
  lossShards = plan::intOf(planAttr, "loss_shards", 1);
  rowGroup = plan::rowGroupOf(planAttr);
  recompute = plan::recomputes(model);
  if (auto scale = planAttr.getAs<FloatAttr>("loss_scale"))
    lossShards = scale.getValueAsDouble();
  for (Type t : model.getArgumentTypes()) {
    auto rt = cast<RankedTensorType>(t);
    if (rt.getRank() == 0 || rt.getShape()[0] != micro)
      return model.emitOpError("is elaborated at a batch of ")
             << (rt.getRank() ? rt.getShape()[0] : 0)
             << ", but rank programs need it at its micro-batch of " << micro
             << " (the front end elaborates it so for whale compile "
                "--emit=ranks)";
  }
  ops.assign(stages, SmallVector<SmallVector<Operation *>>(chunks));
  params.resize(stages);
  schedules.resize(stages);
  for (TaskGraphOp tg : plan::taskGraphs(model)) {
    int64_t s = tg->getAttrOfType<IntegerAttr>("stage").getInt();
    auto c = tg->getAttrOfType<IntegerAttr>("chunk");
    int64_t chunk = c ? c.getInt() : 0;
    if (chunk < 0 || chunk >= chunks)
      return tg.emitOpError("is chunk ")
             << chunk << " of a stage, but the plan has " << chunks << " chunk"
             << (chunks == 1 ? "" : "s") << " a stage";
    schedules[s] = tg->getAttrOfType<ScheduleAttr>("schedule");
    auto shards = tg->getAttrOfType<IntegerAttr>("shards");
    for (Operation &op : tg.getBody().front().without_terminator()) {
      if (auto p = dyn_cast<ParamOp>(op)) {
        params[s].push_back(p);
        if (shards)
          shardedBy[p.getName()] = shards.getInt();
      } else
        ops[s][chunk].push_back(&op);
      // Statistics of the whole batch need all of a replica's rows at once.
      if (isa<BatchNormOp>(op) && microBatches > 1)
        return op.emitOpError("normalizes over the whole batch, so its "
                              "stage cannot run in micro-batches (this plan "
                              "has ")
               << microBatches
               << "); plan with num_micro_batch = 1, or without a pipeline";
    }
  }
  for (int64_t s = 0; s < stages; ++s) {
    if (!schedules[s])
      return model.emitOpError("stage ")
             << s << " has no schedule; run -whale-pipeline first";
    if (schedules[s].chunks() != chunks)
      return model.emitOpError("stage ")
             << s << "'s schedule runs " << schedules[s].chunks() << " chunk"
             << (schedules[s].chunks() == 1 ? "" : "s") << ", but the plan has "
             << chunks;
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      auto note = [&](Value v) -> LogicalResult {
        v = throughYields(v);
        if (isa<BlockArgument>(v))
          return success();
        int64_t from = plan::stageOf(v), fromChunk = plan::chunkOf(v);
        if (from == s && fromChunk == chunk)
          return success();
        if (from < 0 || positionOf(from, fromChunk) > positionOf(s, chunk)) {
          InFlightDiagnostic d = model.emitOpError("stage ") << s;
          if (chunks > 1)
            d << " (chunk " << chunk << ")";
          d << " reads a value of stage " << from;
          if (chunks > 1)
            d << " (chunk " << fromChunk << ")";
          return d << ", which runs after it";
        }
        // The rank's own earlier chunk: the value is at hand.
        if (from == s)
          return success();
        boundary.insert(v);
        readers[v].insert(s);
        firstChunk.try_emplace({v, s}, chunk);
        return success();
      };
      for (Operation *op : ops[s][chunk])
        for (Value v : op->getOperands())
          if (failed(note(v)))
            return failure();
    }
  }
  if (boundary.size() >= kMaxBoundary)
    return model.emitOpError("passes more than ")
           << kMaxBoundary << " values between stages";
  auto ret = cast<func::ReturnOp>(model.getBody().front().getTerminator());
  loss = throughYields(ret.getOperand(0));
  lossStage = plan::stageOf(loss);
  lossChunk = plan::chunkOf(loss);
  if (lossStage < 0)
    return model.emitOpError("returns a loss no stage computes");
  return success();
}

func::FuncOp RankBuilder::declare(int64_t s) {
  OpBuilder b(model.getContext());
  auto scalar = cast<RankedTensorType>(loss.getType());
  // Inputs: this replica's rows of the global batch, all its micro-batches.
  SmallVector<Type> inputs;
  for (Type t : model.getArgumentTypes()) {
    auto rt = cast<RankedTensorType>(t);
    SmallVector<int64_t> shape(rt.getShape());
    shape[0] *= microBatches;
    inputs.push_back(RankedTensorType::get(shape, rt.getElementType()));
  }
  b.setInsertionPointAfter(model);
  auto fn = func::FuncOp::create(
      b, model.getLoc(), (model.getName() + "_stage" + std::to_string(s)).str(),
      b.getFunctionType(inputs, {scalar}));
  NamedAttrList rank(planAttr.getValue());
  rank.set("stage", b.getI64IntegerAttr(s));
  rank.set("model", b.getStringAttr(model.getName()));
  fn->setAttr("whale.rank", rank.getDictionary(b.getContext()));
  fn.addEntryBlock();
  return fn;
}

LogicalResult RankBuilder::build(int64_t s, func::FuncOp fn) {
  OpBuilder b(model.getContext());
  Location loc = model.getLoc();
  auto scalar = cast<RankedTensorType>(loss.getType());
  auto constant = [&](Type t, double v) {
    return ConstantOp::create(b, loc, t, b.getF64FloatAttr(v)).getResult();
  };
  Block *entry = &fn.getBody().front();
  b.setInsertionPointToStart(entry);

  IRMapping shared;
  SmallVector<ParamOp> ownParams;
  for (ParamOp p : params[s]) {
    auto c = cast<ParamOp>(b.clone(*p));
    shared.map(p.getResult(), c.getResult());
    if (!c.getFrozen()) // frozen state takes no gradient and no update
      ownParams.push_back(c);
  }
  DenseMap<Value, Value> accumulated; // per parameter clone
  // Per micro-batch: the forward's values (of every chunk), its ops per
  // chunk, and the gradients its backwards have made so far.
  SmallVector<IRMapping> forward(microBatches);
  SmallVector<bool> started(microBatches, false);
  SmallVector<SmallVector<SmallVector<Operation *>>> forwardOps(
      microBatches, SmallVector<SmallVector<Operation *>>(chunks));
  SmallVector<DenseMap<Value, Value>> gradsOf(microBatches);
  SmallVector<Value> losses;
  // Recomputation's segments of each chunk's forward.
  SmallVector<SmallVector<size_t>> segments(chunks);

  for (const ScheduleStep &step : schedules[s].getSteps()) {
    int64_t j = step.microBatch, chunk = step.chunk;
    IRMapping &map = forward[j];
    if (!step.backward) {
      if (!started[j]) {
        started[j] = true;
        map = shared;
        for (BlockArgument arg : model.getArguments()) {
          Value local = fn.getArgument(arg.getArgNumber());
          if (microBatches > 1) {
            auto t = cast<RankedTensorType>(arg.getType());
            local = SliceOp::create(b, loc, t, local, 0, j * micro,
                                    (j + 1) * micro);
          }
          map.map(arg, local);
        }
      }
      for (auto [i, v] : llvm::enumerate(boundary))
        if (readsFirstOn(v, s, chunk))
          map.map(v, RecvOp::create(b, loc, v.getType(), plan::stageOf(v),
                                    tagOf(j, false, i)));
      for (Operation *op : ops[s][chunk]) {
        for (Value v : op->getOperands())
          if (Value r = throughYields(v); r != v)
            map.map(v, map.lookupOrDefault(r));
        Operation *clone = b.clone(*op, map);
        // A dropout draws by global row: micro-batch j's rows start j
        // micro-batches into the rank's.
        if (auto d = dyn_cast<DropoutOp>(clone))
          d.setRowOffset(d.getRowOffset() + j * micro);
        // Ranks sharing rows each add the same sums to the statistics.
        if (auto bn = dyn_cast<BatchNormOp>(clone))
          bn.setRowCopies(rowGroup);
        forwardOps[j][chunk].push_back(clone);
      }
      auto madeHere = [&](Value v) {
        return plan::stageOf(v) == s && plan::chunkOf(v) == chunk;
      };
      for (auto [i, v] : llvm::enumerate(boundary))
        if (madeHere(v))
          for (int64_t reader : readersOf(v))
            SendOp::create(b, loc, map.lookup(v), reader, tagOf(j, false, i));
      if (lossStage == s && lossChunk == chunk)
        losses.push_back(map.lookup(loss));
      continue;
    }
    // Backward of micro-batch j on this chunk.
    DenseMap<Value, Value> &grads = gradsOf[j];
    auto add = [&](Value v, Value g) {
      auto [it, fresh] = grads.try_emplace(v, g);
      if (!fresh)
        it->second = AddOp::create(b, loc, v.getType(), it->second, g);
    };
    // A loss whole over a shard group is the group's rows' mean.
    if (lossStage == s && lossChunk == chunk)
      grads[map.lookup(loss)] = constant(scalar, weight * lossShards);
    for (auto [i, v] : llvm::enumerate(boundary))
      if (plan::stageOf(v) == s && plan::chunkOf(v) == chunk)
        for (int64_t reader : readersOf(v))
          add(map.lookup(v),
              RecvOp::create(b, loc, v.getType(), reader, tagOf(j, true, i)));
    if (recompute) {
      // Every micro-batch's forward of a chunk is the same ops: cut once a
      // chunk, for the micro-batches its schedule holds at once (as
      // -whale-balance counts them).
      if (segments[chunk].empty())
        segments[chunk] = plan::recomputeSegments(forwardOps[j][chunk],
                                                  heldBy(schedules[s], chunk));
      if (failed(backpropagateRecomputing(b, forwardOps[j][chunk],
                                          segments[chunk], grads)))
        return failure();
    } else if (failed(backpropagate(b, forwardOps[j][chunk], grads))) {
      return failure();
    }
    for (auto [i, v] : llvm::enumerate(boundary))
      if (readsFirstOn(v, s, chunk)) {
        Value g = grads.lookup(map.lookup(v));
        if (!g)
          g = constant(v.getType(), 0);
        SendOp::create(b, loc, g, plan::stageOf(v), tagOf(j, true, i));
      }
    // The parameters' gradients so far join the running sums, and leave
    // the micro-batch's map: a later chunk's backward may add more.
    for (ParamOp p : ownParams)
      if (auto it = grads.find(p.getResult()); it != grads.end()) {
        Value g = it->second;
        grads.erase(it);
        Value &acc = accumulated[p.getResult()];
        acc = acc ? AddOp::create(b, loc, p.getType(), acc, g).getResult() : g;
      }
  }

  // Every parameter's gradient, summed over the replicas bucket by bucket.
  SmallVector<Value> grads;
  llvm::StringMap<unsigned> position;
  for (auto [i, p] : llvm::enumerate(ownParams)) {
    Value g = accumulated.lookup(p.getResult());
    grads.push_back(g ? g : constant(p.getType(), 0));
    position[p.getName()] = i;
  }
  if (replicas > 1) {
    auto perStage = planAttr.getAs<ArrayAttr>("buckets");
    for (Attribute bucket : cast<ArrayAttr>(perStage[s])) {
      // One all-reduce per group the bucket's parameters sync over.
      std::map<int64_t, SmallVector<unsigned>> byShards;
      for (Attribute name : cast<ArrayAttr>(bucket)) {
        StringRef n = cast<StringAttr>(name).getValue();
        // A whole parameter of ranks sharing rows: its gradient is the
        // same on every rank of the group, summed over the groups alone.
        int64_t shards = shardedBy.lookup(n);
        byShards[shards ? shards : rowGroup > 1 ? rowGroup : 0].push_back(
            position.lookup(n));
      }
      for (auto &[shards, at] : byShards) {
        if (shards >= replicas)
          continue; // every rank of the stage holds its own part
        SmallVector<Value> values;
        SmallVector<Type> types;
        for (unsigned i : at) {
          values.push_back(grads[i]);
          types.push_back(values.back().getType());
        }
        auto reduced = AllReduceOp::create(
            b, loc, types, values,
            b.getStringAttr(shards ? "shard_peers" : "replicas"),
            shards ? b.getI64IntegerAttr(shards) : IntegerAttr(),
            /*owners=*/DenseI64ArrayAttr());
        for (auto [k, i] : llvm::enumerate(at))
          grads[i] = reduced.getResult(k);
      }
    }
  }
  auto train = model->getAttrOfType<DictionaryAttr>("whale.train");
  if (failed(emitOptimizerUpdates(b, loc, model, train, ownParams, grads,
                                  stages > 1 ? b.getStringAttr("stages")
                                             : StringAttr())))
    return failure();

  // The loss of this rank's share of the batch (the last stage's ranks;
  // the others return zero), so the ranks' losses add up to the global one
  // (ranks sharing rows each return their share of it).
  Value total;
  for (Value l : losses) {
    Value weighted = MulOp::create(b, loc, scalar, l,
                                   constant(scalar, weight / double(rowGroup)));
    total = total ? AddOp::create(b, loc, scalar, total, weighted).getResult()
                  : weighted;
  }
  if (!total)
    total = constant(scalar, 0);
  func::ReturnOp::create(b, loc, total);

  // Gradients of inputs and of what no parameter needs feed nothing.
  SmallVector<Operation *> built;
  for (Operation &op : *entry)
    built.push_back(&op);
  for (Operation *op : llvm::reverse(built))
    if (!isa<ParamOp>(op) && isOpTriviallyDead(op))
      op->erase();
  return success();
}

struct RankProgramsPass
    : public whale::impl::WhaleRankProgramsBase<RankProgramsPass> {
  void runOnOperation() override {
    SmallVector<func::FuncOp> models;
    getOperation().walk([&](func::FuncOp fn) {
      if (fn->hasAttr("whale.model") && fn->hasAttr("whale.plan"))
        models.push_back(fn);
    });
    for (func::FuncOp fn : models) {
      RankBuilder builder(fn);
      if (failed(builder.analyze()))
        return signalPassFailure();
      // The functions are placed in turn (stage 0 first in the module),
      // then filled side by side on the context's threads: a large
      // pipeline's stages are hundreds of thousands of ops each.
      int64_t stages = plan::intOf(plan::planOf(fn), "stages", 1);
      SmallVector<func::FuncOp> programs(stages);
      for (int64_t s = stages - 1; s >= 0; --s)
        programs[s] = builder.declare(s);
      if (failed(
              failableParallelForEachN(&getContext(), 0, stages, [&](size_t s) {
                return builder.build(s, programs[s]);
              })))
        return signalPassFailure();
      // The rank programs hold all the model now.
      fn.erase();
    }
  }
};

} // namespace
