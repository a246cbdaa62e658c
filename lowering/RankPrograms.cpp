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
// With many micro-batches (kOutlineFrom or more, one chunk a stage, no
// dropout) the steps are not unrolled: the forward and the backward of one
// micro-batch are functions of their own (`<stage>_forward`,
// `<stage>_backward`), which the stage's program calls once a step with that
// micro-batch's inputs, received values and kept activations, then
// `<stage>_accumulate` to add the parameters' gradients to their running sums;
// the last backward stays inline, so the gradients' sums can start inside it.
// Fusion then runs on each step once, and the simulator reads it once (a
// 1T-parameter pipeline runs 512 micro-batches a stage); the runtime's lowering
// inlines the calls.
//
// The model must be elaborated at its micro-batch: static shapes are the
// shapes one micro-batch has on one rank.
//
//===----------------------------------------------------------------------===//

#include "lowering/CloneBody.h"
#include "lowering/Passes.h"
#include "lowering/Plan.h"
#include "lowering/Recompute.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Threading.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/BitVector.h"
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
/// The fewest micro-batches whose steps a stage's program calls instead of
/// unrolling: fewer repeat too little for the calls to pay.
constexpr int64_t kOutlineFrom = 8;

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
  /// The functions of one micro-batch's forward and backward that stage
  /// `s`'s program calls (outlines(s)), declared with the program.
  struct Steps {
    /// `accumulate` adds a micro-batch's gradients of the parameters to
    /// their running sums, after the backward has sent its gradients on
    /// (as the unrolled program does): one call, not an add a parameter.
    func::FuncOp forward, backward, accumulate;
  };
  /// Whether stage `s`'s steps are outlined: with one chunk a stage and
  /// kOutlineFrom micro-batches or more, where every micro-batch runs the
  /// same ops (a dropout draws by the micro-batch's rows: not so).
  /// (Batch normalization never gets here: analyze() refuses it with
  /// micro-batches.)
  bool outlines(int64_t s) const {
    return chunks == 1 && microBatches >= kOutlineFrom &&
           llvm::none_of(ops[s][0],
                         [](Operation *op) { return isa<DropoutOp>(op); });
  }
  /// Runs stage `s`'s schedule as calls of its Steps, built first, at b's
  /// insertion point in `fn`: the parameters' gradients into `accumulated`
  /// (keyed by `shared`'s clones), the losses of the micro-batches into
  /// `losses`.
  LogicalResult buildCalls(int64_t s, func::FuncOp fn, OpBuilder &b,
                           const IRMapping &shared, ArrayRef<ParamOp> ownParams,
                           DenseMap<Value, Value> &accumulated,
                           SmallVector<Value> &losses);

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
  /// Per stage: its outlined steps (null where it unrolls them).
  SmallVector<Steps> steps;
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
  steps.resize(stages);
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
  const std::string name =
      (model.getName() + "_stage" + std::to_string(s)).str();
  auto fn = func::FuncOp::create(b, model.getLoc(), name,
                                 b.getFunctionType(inputs, {scalar}));
  NamedAttrList rank(planAttr.getValue());
  rank.set("stage", b.getI64IntegerAttr(s));
  rank.set("model", b.getStringAttr(model.getName()));
  fn->setAttr("whale.rank", rank.getDictionary(b.getContext()));
  fn.addEntryBlock();
  // The steps it calls stand before it; their signatures are set as they
  // are built.
  if (outlines(s))
    for (auto [direction, step] :
         {std::pair{"_accumulate", &steps[s].accumulate},
          std::pair{"_backward", &steps[s].backward},
          std::pair{"_forward", &steps[s].forward}}) {
      b.setInsertionPointAfter(model);
      *step = func::FuncOp::create(b, model.getLoc(), name + direction,
                                   b.getFunctionType({}, {}));
      step->setPrivate();
      step->addEntryBlock();
    }
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
  SmallVector<Value> losses;

  if (steps[s].forward) {
    if (failed(buildCalls(s, fn, b, shared, ownParams, accumulated, losses)))
      return failure();
  } else {
    // Per micro-batch: the forward's values (of every chunk), its ops per
    // chunk, and the gradients its backwards have made so far.
    SmallVector<IRMapping> forward(microBatches);
    SmallVector<bool> started(microBatches, false);
    SmallVector<SmallVector<SmallVector<Operation *>>> forwardOps(
        microBatches, SmallVector<SmallVector<Operation *>>(chunks));
    SmallVector<DenseMap<Value, Value>> gradsOf(microBatches);
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
          segments[chunk] = plan::recomputeSegments(
              forwardOps[j][chunk], heldBy(schedules[s], chunk));
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
          acc =
              acc ? AddOp::create(b, loc, p.getType(), acc, g).getResult() : g;
        }
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

LogicalResult RankBuilder::buildCalls(int64_t s, func::FuncOp fn, OpBuilder &b,
                                      const IRMapping &shared,
                                      ArrayRef<ParamOp> ownParams,
                                      DenseMap<Value, Value> &accumulated,
                                      SmallVector<Value> &losses) {
  Location loc = model.getLoc();
  MLIRContext *ctx = model.getContext();
  auto scalar = cast<RankedTensorType>(loss.getType());
  func::FuncOp forwardFn = steps[s].forward, backwardFn = steps[s].backward;
  Block *fwd = &forwardFn.getBody().front();
  Block *bwd = &backwardFn.getBody().front();

  // The forward's arguments: the stage's parameters, the micro-batch's
  // inputs, the values it receives (in the boundary's order).
  IRMapping map;
  for (ParamOp p : params[s])
    map.map(p.getResult(), fwd->addArgument(p.getType(), loc));
  for (BlockArgument arg : model.getArguments())
    map.map(arg, fwd->addArgument(arg.getType(), loc));
  SmallVector<int64_t> received, sent;
  for (auto [i, v] : llvm::enumerate(boundary)) {
    if (readsFirstOn(v, s, 0)) {
      received.push_back(i);
      map.map(v, fwd->addArgument(v.getType(), loc));
    }
    if (plan::stageOf(v) == s)
      sent.push_back(i);
  }
  OpBuilder fb = OpBuilder::atBlockEnd(fwd);
  SmallVector<Operation *> forwardOps;
  for (Operation *op : ops[s][0]) {
    for (Value v : op->getOperands())
      if (Value r = throughYields(v); r != v)
        map.map(v, map.lookupOrDefault(r));
    Operation *clone = fb.clone(*op, map);
    forwardOps.push_back(clone);
  }
  // Its results: the values later stages read, the loss, then (below) what
  // the backward reads of it.
  SmallVector<Value> forwardResults;
  for (int64_t i : sent)
    forwardResults.push_back(map.lookup(boundary[i]));
  const int64_t lossAt = lossStage == s ? int64_t(forwardResults.size()) : -1;
  if (lossAt >= 0)
    forwardResults.push_back(map.lookup(loss));

  // The backward, built against the forward's values, then cut loose from
  // them. Its first arguments: the gradients the readers of the values
  // sent return, reader by reader.
  OpBuilder bb = OpBuilder::atBlockEnd(bwd);
  DenseMap<Value, Value> grads;
  auto add = [&](Value v, Value g) {
    auto [it, fresh] = grads.try_emplace(v, g);
    if (!fresh)
      it->second = AddOp::create(bb, loc, v.getType(), it->second, g);
  };
  if (lossAt >= 0)
    grads[map.lookup(loss)] = ConstantOp::create(
        bb, loc, scalar, bb.getF64FloatAttr(weight * lossShards));
  // What the caller passes for each of the backward's arguments.
  struct Source {
    enum Kind { Gradient, ForwardArgument, ForwardResult } kind;
    int64_t index = 0, peer = 0; ///< Gradient: the boundary value, its reader
  };
  SmallVector<Source> sources;
  for (int64_t i : sent)
    for (int64_t reader : readersOf(boundary[i])) {
      Value v = boundary[i];
      add(map.lookup(v), bwd->addArgument(v.getType(), loc));
      sources.push_back({Source::Gradient, i, reader});
    }
  if (recompute) {
    SmallVector<size_t> segments =
        plan::recomputeSegments(forwardOps, heldBy(schedules[s], 0));
    if (failed(backpropagateRecomputing(bb, forwardOps, segments, grads)))
      return failure();
  } else if (failed(backpropagate(bb, forwardOps, grads))) {
    return failure();
  }
  // Its results: the gradients of the values received, then of the
  // parameters that have one (the same for every micro-batch).
  SmallVector<Value> backwardResults;
  for (int64_t i : received) {
    Value g = grads.lookup(map.lookup(boundary[i]));
    if (!g)
      g = ConstantOp::create(bb, loc, boundary[i].getType(),
                             bb.getF64FloatAttr(0));
    backwardResults.push_back(g);
  }
  SmallVector<ParamOp> graded; // ownParams' clones with a gradient
  for (ParamOp own : ownParams) {
    // The forward's argument of the same parameter: ownParams are the
    // clones of params[s]'s trained ones, in order.
    auto original = llvm::find_if(
        params[s], [&](ParamOp p) { return p.getName() == own.getName(); });
    if (auto it = grads.find(map.lookup(original->getResult()));
        it != grads.end()) {
      backwardResults.push_back(it->second);
      graded.push_back(own);
    }
  }
  func::ReturnOp::create(bb, loc, backwardResults);
  auto dropDead = [](Block *block) {
    SmallVector<Operation *> all;
    for (Operation &op : block->without_terminator())
      all.push_back(&op);
    for (Operation *op : llvm::reverse(all))
      if (isOpTriviallyDead(op))
        op->erase();
  };
  dropDead(bwd);
  // The forward's values the backward reads: its arguments the caller
  // passes again; the others it returns, and the caller hands them on.
  DenseMap<Value, Value> outside;
  backwardFn.walk([&](Operation *op) {
    for (OpOperand &use : op->getOpOperands()) {
      Value v = use.get();
      Operation *owner = isa<BlockArgument>(v)
                             ? cast<BlockArgument>(v).getOwner()->getParentOp()
                             : v.getDefiningOp();
      if (backwardFn->isAncestor(owner))
        continue;
      auto [it, fresh] = outside.try_emplace(v);
      if (fresh) {
        it->second = bwd->addArgument(v.getType(), loc);
        if (auto a = dyn_cast<BlockArgument>(v); a && a.getOwner() == fwd) {
          sources.push_back({Source::ForwardArgument, a.getArgNumber()});
        } else {
          sources.push_back(
              {Source::ForwardResult, int64_t(forwardResults.size())});
          forwardResults.push_back(v);
        }
      }
      use.set(it->second);
    }
  });
  func::ReturnOp::create(fb, loc, forwardResults);
  dropDead(fwd);
  // The forward's arguments neither step reads are not passed (a stage
  // slices only the inputs it reads); received values are, as every
  // message sent must be received.
  const unsigned firstReceived = fwd->getNumArguments() - received.size();
  llvm::BitVector unused(fwd->getNumArguments());
  for (BlockArgument a : fwd->getArguments())
    unused[a.getArgNumber()] =
        a.use_empty() && a.getArgNumber() < firstReceived;
  for (const Source &from : sources)
    if (from.kind == Source::ForwardArgument)
      unused.reset(from.index);
  SmallVector<int64_t> renumbered(fwd->getNumArguments(), -1);
  for (unsigned i = 0, next = 0; i < unused.size(); ++i)
    if (!unused[i])
      renumbered[i] = next++;
  for (Source &from : sources)
    if (from.kind == Source::ForwardArgument)
      from.index = renumbered[from.index];
  fwd->eraseArguments(unused);
  forwardFn.setFunctionType(FunctionType::get(
      ctx, fwd->getArgumentTypes(), ValueRange(forwardResults).getTypes()));
  backwardFn.setFunctionType(FunctionType::get(
      ctx, bwd->getArgumentTypes(), ValueRange(backwardResults).getTypes()));
  // The running sums: each parameter's, plus its gradient of one
  // micro-batch.
  func::FuncOp accumulateFn = steps[s].accumulate;
  {
    Block *sum = &accumulateFn.getBody().front();
    OpBuilder ab = OpBuilder::atBlockEnd(sum);
    SmallVector<Value> running, sums;
    for (ParamOp own : graded)
      running.push_back(sum->addArgument(own.getType(), loc));
    for (auto [own, r] : llvm::zip(graded, running))
      sums.push_back(AddOp::create(ab, loc, own.getType(), r,
                                   sum->addArgument(own.getType(), loc)));
    func::ReturnOp::create(ab, loc, sums);
    accumulateFn.setFunctionType(FunctionType::get(
        ctx, sum->getArgumentTypes(), ValueRange(sums).getTypes()));
  }

  // The schedule, a call a step. Per micro-batch: what its forward was
  // passed and returned.
  SmallVector<SmallVector<Value>> passed(microBatches), kept(microBatches);
  bool accumulating = false;
  ArrayRef<ScheduleStep> schedule = schedules[s].getSteps();
  for (auto [n, step] : llvm::enumerate(schedule)) {
    const int64_t j = step.microBatch;
    if (!step.backward) {
      SmallVector<Value> &args = passed[j];
      unsigned at = 0;
      for (ParamOp p : params[s])
        if (!unused[at++])
          args.push_back(shared.lookup(p.getResult()));
      for (BlockArgument arg : model.getArguments())
        if (!unused[at++])
          args.push_back(SliceOp::create(b, loc,
                                         cast<RankedTensorType>(arg.getType()),
                                         fn.getArgument(arg.getArgNumber()), 0,
                                         j * micro, (j + 1) * micro));
      for (int64_t i : received)
        args.push_back(RecvOp::create(b, loc, boundary[i].getType(),
                                      plan::stageOf(boundary[i]),
                                      tagOf(j, false, i)));
      auto call = func::CallOp::create(b, loc, forwardFn, args);
      kept[j].assign(call.getResults().begin(), call.getResults().end());
      for (auto [k, i] : llvm::enumerate(sent))
        for (int64_t reader : readersOf(boundary[i]))
          SendOp::create(b, loc, call.getResult(k), reader, tagOf(j, false, i));
      if (lossAt >= 0)
        losses.push_back(call.getResult(lossAt));
      continue;
    }
    SmallVector<Value> args;
    for (const Source &from : sources)
      switch (from.kind) {
      case Source::Gradient:
        args.push_back(RecvOp::create(b, loc, boundary[from.index].getType(),
                                      from.peer, tagOf(j, true, from.index)));
        break;
      case Source::ForwardArgument:
        args.push_back(passed[j][from.index]);
        break;
      case Source::ForwardResult:
        args.push_back(kept[j][from.index]);
        break;
      }
    // The last backward stands inline, its sums too: the gradients' sums
    // over the replicas start inside it, as each parameter's last
    // gradient is made.
    const bool last = n + 1 == schedule.size();
    SmallVector<Value> results;
    if (last) {
      results = cloneBody(b, *bwd, args);
    } else {
      auto call = func::CallOp::create(b, loc, backwardFn, args);
      results.assign(call.getResults().begin(), call.getResults().end());
    }
    for (auto [k, i] : llvm::enumerate(received))
      SendOp::create(b, loc, results[k], plan::stageOf(boundary[i]),
                     tagOf(j, true, i));
    ArrayRef<Value> gradients =
        ArrayRef<Value>(results).drop_front(received.size());
    if (!accumulating || last) {
      for (auto [own, g] : llvm::zip(graded, gradients)) {
        Value &acc = accumulated[own.getResult()];
        acc =
            acc ? AddOp::create(b, loc, own.getType(), acc, g).getResult() : g;
      }
    } else {
      SmallVector<Value> sums;
      for (ParamOp own : graded)
        sums.push_back(accumulated.lookup(own.getResult()));
      sums.append(gradients.begin(), gradients.end());
      auto call = func::CallOp::create(b, loc, accumulateFn, sums);
      for (auto [own, sum] : llvm::zip(graded, call.getResults()))
        accumulated[own.getResult()] = sum;
    }
    accumulating = true;
  }
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
