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
// With many micro-batches (kOutlineFrom or more) the steps are not
// unrolled: the forward and the backward of one micro-batch are functions of
// their own (`<stage>_forward`, `<stage>_backward`; a chunk's each under an
// interleaved schedule, `<stage>_chunk<c>_forward`), which the stage's
// program calls once a step with that micro-batch's inputs, received values,
// values of its earlier chunks and kept activations (and where its rows
// start, for its dropouts), then `<stage>_accumulate` to add the parameters'
// gradients to their running sums; each chunk's last backward stays inline,
// so the gradients' sums can start inside it. Fusion then runs on each step
// once, and the simulator reads it once (a 1T-parameter pipeline runs 512
// micro-batches a stage); the runtime's lowering inlines the calls.
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
  /// Whether stage `s`'s schedule runs, for each micro-batch, the forward
  /// of every chunk after those of the rank's chunks it reads
  /// (`readsFrom`), and their backwards in reverse: the values pass within
  /// the rank, and no other stage's schedule orders them.
  LogicalResult
  checkChunkOrder(int64_t s,
                  ArrayRef<llvm::SmallSetVector<int64_t, 2>> readsFrom);
  /// Stage `s`'s function, its signature and plan but no body yet, placed
  /// just after the model.
  func::FuncOp declare(int64_t s);
  /// Builds stage `s`'s program into `fn`. Reads the model and the
  /// analysis only, so stages build side by side.
  LogicalResult build(int64_t s, func::FuncOp fn);

private:
  /// The functions of one micro-batch's forward and backward of one chunk
  /// that a stage's program calls (outlines()), declared with the program.
  struct Steps {
    /// `accumulate` adds a micro-batch's gradients of the parameters to
    /// their running sums, after the backward has sent its gradients on
    /// (as the unrolled program does): one call, not an add a parameter.
    func::FuncOp forward, backward, accumulate;
  };
  /// What the caller passes for one of an outlined backward's arguments.
  struct Source {
    enum Kind {
      Gradient,        ///< received from `peer`, of boundary value `index`
      LaterGradient,   ///< `value`'s gradient summed over later chunks
      ForwardArgument, ///< the forward's argument `index`
      ForwardResult,   ///< the forward's result `index`
    } kind;
    int64_t index = 0, peer = 0;
    Value value = {};
  };
  /// One chunk's steps while they are built, and how the caller calls
  /// them.
  struct Outlined : Steps {
    /// The model's values -> the forward's, and the forward's ops.
    IRMapping map;
    SmallVector<Operation *> forwardOps;
    /// The model's values the forward takes after the parameters and the
    /// inputs: those received on this chunk (the boundary's `received`),
    /// then those the rank's earlier chunks made or received.
    SmallVector<Value> inputs;
    SmallVector<int64_t> received, sent; ///< boundary indices
    /// The forward's results: the values sent, the loss (at lossAt, or
    /// -1), the values the rank's later chunks read (handedOn, at
    /// handedOnAt), then what the backward reads of it.
    SmallVector<Value> results;
    int64_t lossAt = -1;
    SmallVector<Value> handedOn;
    SmallVector<int64_t> handedOnAt;
    /// The forward's arguments the caller does not pass.
    llvm::BitVector unused;
    /// What the caller passes the backward, argument by argument.
    SmallVector<Source> sources;
    /// The parameters the backward returns a gradient of, after the
    /// inputs' (by name: the rank program's clones are other ops).
    SmallVector<StringRef> graded;
    /// Whether its ops draw dropout: its calls then say where their
    /// micro-batch's rows start.
    bool draws = false;
  };
  /// Whether the stages' steps are outlined: with kOutlineFrom
  /// micro-batches or more. Every micro-batch runs the same ops, but for
  /// where its dropouts draw: its calls say so (kStepRowsAttr). (Batch
  /// normalization never gets here: analyze() refuses it with
  /// micro-batches.)
  bool outlines() const { return microBatches >= kOutlineFrom; }
  /// Builds one chunk's forward into o.forward, up to its return: its
  /// arguments, ops, and the results every caller needs.
  LogicalResult outlineForward(int64_t s, int64_t chunk, Outlined &o);
  /// Builds its backward and accumulation, once o.handedOn is known, and
  /// settles the forward's arguments and results.
  LogicalResult outlineBackward(int64_t s, int64_t chunk, Outlined &o);
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
  /// Makes every message's stage and tag attribute, before the stages are
  /// built side by side: uniquing an attribute takes the context's lock,
  /// and on Megatron-LM's 1T plan (512 micro-batches) the sends' and
  /// receives' attributes were a third of building the programs.
  void makeMessageAttributes();
  /// A message to or from `stage` of boundary value `i` of micro-batch `j`.
  void send(OpBuilder &b, Location loc, Value v, int64_t stage, int64_t j,
            bool backward, int64_t i) const {
    SendOp::create(b, loc, v, stageAttrs[stage], tagAttr(j, backward, i));
  }
  Value receive(OpBuilder &b, Location loc, Type t, int64_t stage, int64_t j,
                bool backward, int64_t i) const {
    return RecvOp::create(b, loc, t, stageAttrs[stage],
                          tagAttr(j, backward, i));
  }
  IntegerAttr tagAttr(int64_t j, bool backward, int64_t i) const {
    return tagAttrs[(j * 2 + (backward ? 1 : 0)) * boundary.size() + i];
  }
  /// Where a stage and chunk stand in the pipeline: chunk 0 of every
  /// stage, then chunk 1 of every stage, and so on.
  int64_t positionOf(int64_t s, int64_t chunk) const {
    return chunk * stages + s;
  }

  func::FuncOp model;
  ModelPlan plan;
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
  /// Per stage: its outlined steps, a chunk's each (none where it unrolls
  /// them).
  SmallVector<SmallVector<Steps>> steps;
  /// Each stage's index, and each message's tag (by micro-batch, direction
  /// and boundary value), as attributes: makeMessageAttributes().
  SmallVector<IntegerAttr> stageAttrs;
  std::vector<IntegerAttr> tagAttrs;
};

void RankBuilder::makeMessageAttributes() {
  Builder b(model.getContext());
  stageAttrs.clear();
  for (int64_t s = 0; s < stages; ++s)
    stageAttrs.push_back(b.getI64IntegerAttr(s));
  tagAttrs.clear();
  tagAttrs.reserve(microBatches * 2 * boundary.size());
  for (int64_t j = 0; j < microBatches; ++j)
    for (bool backward : {false, true})
      for (int64_t i = 0, n = boundary.size(); i < n; ++i)
        tagAttrs.push_back(b.getI64IntegerAttr(tagOf(j, backward, i)));
}

LogicalResult RankBuilder::checkChunkOrder(
    int64_t s, ArrayRef<llvm::SmallSetVector<int64_t, 2>> readsFrom) {
  // What each micro-batch has run so far, per chunk: a forward of chunk c
  // needs those of the chunks it reads, a backward of chunk c' those of
  // the chunks that read it (its values' gradients come from them).
  DenseSet<std::pair<int64_t, int64_t>> ranForward, ranBackward;
  for (const ScheduleStep &step : schedules[s].getSteps()) {
    const int64_t j = step.microBatch, c = step.chunk;
    for (int64_t other = 0; other < chunks; ++other) {
      const bool needed = step.backward ? readsFrom[other].contains(c)
                                        : readsFrom[c].contains(other);
      auto &ran = step.backward ? ranBackward : ranForward;
      if (needed && !ran.contains({j, other})) {
        ScheduleStep missing{step.backward, j, other};
        return model.emitOpError("stage ")
               << s << "'s schedule runs " << step.str() << " before "
               << missing.str() << ", but chunk " << (step.backward ? other : c)
               << " reads values of chunk " << (step.backward ? c : other)
               << " on the same rank";
      }
    }
    (step.backward ? ranBackward : ranForward).insert({j, c});
  }
  return success();
}

LogicalResult RankBuilder::analyze() {
  plan = ModelPlan::of(model);
  stages = plan.stages().value_or(0);
  replicas = plan.replicas().value_or(1);
  micro = plan.microBatch().value_or(0);
  microBatches = plan.microBatches().value_or(1);
  chunks = plan.chunks().value_or(1);
  std::optional<double> w = plan.gradWeight();
  if (!stages || !micro || !w ||
      (replicas > 1 && (!plan.buckets() ||
                        plan.buckets().size() != static_cast<size_t>(stages))))
    return model.emitOpError(
        "is not fully planned; run -whale-virtual-devices, "
        "-whale-pipeline and -whale-data-parallel first");
  weight = *w;
  lossShards = plan.lossShards().value_or(1);
  rowGroup = plan.rowGroupOrOne();
  recompute = plan::recomputes(model);
  if (std::optional<double> scale = plan.lossScale())
    lossShards = *scale;
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
    FailureOr<int64_t> stage = plan::checkedStage(tg, stages);
    if (failed(stage))
      return failure();
    const int64_t s = *stage;
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
    // Per chunk: the rank's earlier chunks whose values it reads (made
    // there, or received there first).
    SmallVector<llvm::SmallSetVector<int64_t, 2>> readsFrom(chunks);
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
        if (from == s) {
          readsFrom[chunk].insert(fromChunk);
          return success();
        }
        boundary.insert(v);
        readers[v].insert(s);
        auto [first, fresh] = firstChunk.try_emplace({v, s}, chunk);
        if (!fresh && first->second != chunk)
          readsFrom[chunk].insert(first->second);
        return success();
      };
      for (Operation *op : ops[s][chunk])
        for (Value v : op->getOperands())
          if (failed(note(v)))
            return failure();
    }
    if (failed(checkChunkOrder(s, readsFrom)))
      return failure();
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
  makeMessageAttributes();
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
  NamedAttrList rank(plan.getDictionary().getValue());
  rank.set("stage", b.getI64IntegerAttr(s));
  rank.set("model", b.getStringAttr(model.getName()));
  fn->setAttr("whale.rank", rank.getDictionary(b.getContext()));
  fn.addEntryBlock();
  // The steps it calls stand before it; their signatures are set as they
  // are built.
  if (outlines()) {
    steps[s].resize(chunks);
    for (int64_t chunk = chunks - 1; chunk >= 0; --chunk) {
      const std::string prefix =
          chunks == 1 ? name : name + "_chunk" + std::to_string(chunk);
      for (auto [direction, step] :
           {std::pair{"_accumulate", &steps[s][chunk].accumulate},
            std::pair{"_backward", &steps[s][chunk].backward},
            std::pair{"_forward", &steps[s][chunk].forward}}) {
        b.setInsertionPointAfter(model);
        *step = func::FuncOp::create(b, model.getLoc(), prefix + direction,
                                     b.getFunctionType({}, {}));
        step->setPrivate();
        step->addEntryBlock();
      }
    }
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

  if (!steps[s].empty()) {
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
            map.map(
                v, receive(b, loc, v.getType(), plan::stageOf(v), j, false, i));
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
              send(b, loc, map.lookup(v), reader, j, false, i);
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
                receive(b, loc, v.getType(), reader, j, true, i));
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
          send(b, loc, g, plan::stageOf(v), j, true, i);
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
    ArrayAttr perStage = plan.buckets();
    for (Attribute bucket : cast<ArrayAttr>(perStage[s])) {
      // One all-reduce per group the bucket's parameters sync over.
      std::map<int64_t, SmallVector<unsigned>> byShards;
      for (Attribute name : cast<ArrayAttr>(bucket)) {
        StringRef n = cast<StringAttr>(name).getValue();
        // A whole parameter of ranks sharing rows: its gradient is the
        // same on every rank of the group, summed over the groups alone.
        int64_t shards = shardedBy.lookup(n);
        byShards[shards         ? shards
                 : rowGroup > 1 ? rowGroup
                                : 0]
            .push_back(position.lookup(n));
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
  if (failed(emitOptimizerUpdates(
          b, loc, model, TrainBlock::of(model), ownParams, grads,
          stages > 1 ? b.getStringAttr("stages") : StringAttr())))
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

LogicalResult RankBuilder::outlineForward(int64_t s, int64_t chunk,
                                          Outlined &o) {
  Location loc = model.getLoc();
  Block *fwd = &o.forward.getBody().front();
  // Its arguments: the stage's parameters, the micro-batch's inputs, the
  // values received on this chunk (in the boundary's order), then (as its
  // ops read them) the values the rank's earlier chunks made or received.
  for (ParamOp p : params[s])
    o.map.map(p.getResult(), fwd->addArgument(p.getType(), loc));
  for (BlockArgument arg : model.getArguments())
    o.map.map(arg, fwd->addArgument(arg.getType(), loc));
  for (auto [i, v] : llvm::enumerate(boundary)) {
    if (readsFirstOn(v, s, chunk)) {
      o.received.push_back(i);
      o.inputs.push_back(v);
      o.map.map(v, fwd->addArgument(v.getType(), loc));
    }
    if (plan::stageOf(v) == s && plan::chunkOf(v) == chunk)
      o.sent.push_back(i);
  }
  OpBuilder fb = OpBuilder::atBlockEnd(fwd);
  for (Operation *op : ops[s][chunk]) {
    for (Value v : op->getOperands()) {
      Value r = throughYields(v);
      // Not made by this chunk's ops so far, nor received here: the rank
      // has it from an earlier chunk (analyze() allows no other source).
      if (!o.map.contains(r)) {
        o.inputs.push_back(r);
        o.map.map(r, fwd->addArgument(r.getType(), loc));
      }
      if (r != v)
        o.map.map(v, o.map.lookup(r));
    }
    o.forwardOps.push_back(fb.clone(*op, o.map));
    o.draws |= isa<DropoutOp>(op);
  }
  // Its results: the values later stages read, the loss, what the rank's
  // later chunks read (handedOn, once known), then what the backward
  // reads of it.
  for (int64_t i : o.sent)
    o.results.push_back(o.map.lookup(boundary[i]));
  if (lossStage == s && lossChunk == chunk) {
    o.lossAt = o.results.size();
    o.results.push_back(o.map.lookup(loss));
  }
  return success();
}

LogicalResult RankBuilder::outlineBackward(int64_t s, int64_t chunk,
                                           Outlined &o) {
  Location loc = model.getLoc();
  MLIRContext *ctx = model.getContext();
  auto scalar = cast<RankedTensorType>(loss.getType());
  Block *fwd = &o.forward.getBody().front();
  Block *bwd = &o.backward.getBody().front();
  // The backward, built against the forward's values, then cut loose from
  // them. Its first arguments: the gradients the readers of the values
  // sent return, reader by reader; then those of the values the rank's
  // later chunks read, summed over their backwards.
  OpBuilder bb = OpBuilder::atBlockEnd(bwd);
  DenseMap<Value, Value> grads;
  auto add = [&](Value v, Value g) {
    auto [it, fresh] = grads.try_emplace(v, g);
    if (!fresh)
      it->second = AddOp::create(bb, loc, v.getType(), it->second, g);
  };
  if (o.lossAt >= 0)
    grads[o.map.lookup(loss)] = ConstantOp::create(
        bb, loc, scalar, bb.getF64FloatAttr(weight * lossShards));
  for (int64_t i : o.sent)
    for (int64_t reader : readersOf(boundary[i])) {
      Value v = boundary[i];
      add(o.map.lookup(v), bwd->addArgument(v.getType(), loc));
      o.sources.push_back({Source::Gradient, i, reader});
    }
  for (Value v : o.handedOn) {
    add(o.map.lookup(v), bwd->addArgument(v.getType(), loc));
    o.sources.push_back({Source::LaterGradient, 0, 0, v});
  }
  if (recompute) {
    SmallVector<size_t> segments =
        plan::recomputeSegments(o.forwardOps, heldBy(schedules[s], chunk));
    if (failed(backpropagateRecomputing(bb, o.forwardOps, segments, grads)))
      return failure();
  } else if (failed(backpropagate(bb, o.forwardOps, grads))) {
    return failure();
  }
  // Its results: the gradients of the forward's inputs (the caller sends
  // those of the values received here, and sums the others into the
  // chunks' that made or received them), then of the parameters that have
  // one (the same for every micro-batch).
  SmallVector<Value> backwardResults;
  for (Value v : o.inputs) {
    Value g = grads.lookup(o.map.lookup(v));
    if (!g)
      g = ConstantOp::create(bb, loc, v.getType(), bb.getF64FloatAttr(0));
    backwardResults.push_back(g);
  }
  // ownParams are the clones of params[s]'s trained ones, in order: each
  // pairs with the forward's argument of the same parameter.
  for (ParamOp p : params[s])
    if (!p.getFrozen())
      if (auto it = grads.find(o.map.lookup(p.getResult()));
          it != grads.end()) {
        backwardResults.push_back(it->second);
        o.graded.push_back(p.getName());
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
  o.backward.walk([&](Operation *op) {
    for (OpOperand &use : op->getOpOperands()) {
      Value v = use.get();
      Operation *owner = isa<BlockArgument>(v)
                             ? cast<BlockArgument>(v).getOwner()->getParentOp()
                             : v.getDefiningOp();
      if (o.backward->isAncestor(owner))
        continue;
      auto [it, fresh] = outside.try_emplace(v);
      if (fresh) {
        it->second = bwd->addArgument(v.getType(), loc);
        if (auto a = dyn_cast<BlockArgument>(v); a && a.getOwner() == fwd) {
          o.sources.push_back({Source::ForwardArgument, a.getArgNumber()});
        } else {
          o.sources.push_back(
              {Source::ForwardResult, int64_t(o.results.size())});
          o.results.push_back(v);
        }
      }
      use.set(it->second);
    }
  });
  OpBuilder fb = OpBuilder::atBlockEnd(fwd);
  func::ReturnOp::create(fb, loc, o.results);
  dropDead(fwd);
  // The parameters and inputs neither step reads are not passed (a stage
  // slices only the inputs it reads); values from elsewhere are, as every
  // message sent must be received.
  const unsigned firstValue = params[s].size() + model.getNumArguments();
  o.unused.resize(fwd->getNumArguments());
  for (BlockArgument a : fwd->getArguments())
    o.unused[a.getArgNumber()] = a.use_empty() && a.getArgNumber() < firstValue;
  for (const Source &from : o.sources)
    if (from.kind == Source::ForwardArgument)
      o.unused.reset(from.index);
  SmallVector<int64_t> renumbered(fwd->getNumArguments(), -1);
  for (unsigned i = 0, next = 0; i < o.unused.size(); ++i)
    if (!o.unused[i])
      renumbered[i] = next++;
  for (Source &from : o.sources)
    if (from.kind == Source::ForwardArgument)
      from.index = renumbered[from.index];
  fwd->eraseArguments(o.unused);
  o.forward.setFunctionType(FunctionType::get(
      ctx, fwd->getArgumentTypes(), ValueRange(o.results).getTypes()));
  o.backward.setFunctionType(FunctionType::get(
      ctx, bwd->getArgumentTypes(), ValueRange(backwardResults).getTypes()));
  // The running sums: each parameter's, plus its gradient of one
  // micro-batch.
  Block *sum = &o.accumulate.getBody().front();
  OpBuilder ab = OpBuilder::atBlockEnd(sum);
  SmallVector<Value> running, sums;
  for (Value g : ValueRange(backwardResults).drop_front(o.inputs.size()))
    running.push_back(sum->addArgument(g.getType(), loc));
  for (Value r : running)
    sums.push_back(AddOp::create(ab, loc, r.getType(), r,
                                 sum->addArgument(r.getType(), loc)));
  func::ReturnOp::create(ab, loc, sums);
  o.accumulate.setFunctionType(FunctionType::get(ctx, sum->getArgumentTypes(),
                                                 ValueRange(sums).getTypes()));
  return success();
}

LogicalResult RankBuilder::buildCalls(int64_t s, func::FuncOp fn, OpBuilder &b,
                                      const IRMapping &shared,
                                      ArrayRef<ParamOp> ownParams,
                                      DenseMap<Value, Value> &accumulated,
                                      SmallVector<Value> &losses) {
  Location loc = model.getLoc();
  std::vector<Outlined> outlined(chunks);
  for (auto [chunk, o] : llvm::enumerate(outlined)) {
    static_cast<Steps &>(o) = steps[s][chunk];
    if (failed(outlineForward(s, chunk, o)))
      return failure();
  }
  // What each chunk hands on to the rank's later chunks: what they read of
  // it (the values it received they get from the caller's receive).
  for (auto [chunk, o] : llvm::enumerate(outlined))
    for (const Outlined &later : ArrayRef(outlined).drop_front(chunk + 1))
      for (Value v : ArrayRef(later.inputs).drop_front(later.received.size()))
        if (plan::chunkOf(v) == int64_t(chunk) && plan::stageOf(v) == s &&
            !llvm::is_contained(o.handedOn, v)) {
          // A value also sent is returned once.
          Value made = o.map.lookup(v);
          auto at = llvm::find(o.results, made);
          o.handedOnAt.push_back(at - o.results.begin());
          o.handedOn.push_back(v);
          if (at == o.results.end())
            o.results.push_back(made);
        }
  for (auto [chunk, o] : llvm::enumerate(outlined))
    if (failed(outlineBackward(s, chunk, o)))
      return failure();
  llvm::StringMap<ParamOp> ownByName;
  for (ParamOp own : ownParams)
    ownByName[own.getName()] = own;

  // The schedule, a call a step. Per micro-batch: its input slices, the
  // model's values the caller holds of it (received, or made by a chunk
  // and read by a later one), the gradients of those summed so far; per
  // micro-batch and chunk, what its forward was passed and returned.
  ArrayRef<ScheduleStep> schedule = schedules[s].getSteps();
  SmallVector<DenseMap<unsigned, Value>> slices(microBatches);
  SmallVector<DenseMap<Value, Value>> held(microBatches),
      gradSums(microBatches);
  SmallVector<SmallVector<SmallVector<Value>>> passed(
      microBatches, SmallVector<SmallVector<Value>>(chunks)),
      kept(microBatches, SmallVector<SmallVector<Value>>(chunks));
  // The last backward of each chunk stands inline, its sums too: the
  // gradients' sums over the replicas start inside it, as each
  // parameter's last gradient is made.
  SmallVector<size_t> lastBackward(chunks, schedule.size());
  for (auto [n, step] : llvm::enumerate(schedule))
    if (step.backward)
      lastBackward[step.chunk] = n;
  for (auto [n, step] : llvm::enumerate(schedule)) {
    const int64_t j = step.microBatch, chunk = step.chunk;
    Outlined &o = outlined[chunk];
    // Micro-batch j's dropouts draw j micro-batches into the rank's rows.
    const int64_t rows = o.draws ? j * micro : 0;
    auto drawFrom = [&](func::CallOp call) {
      if (rows)
        call->setAttr(kStepRowsAttr, b.getI64IntegerAttr(rows));
    };
    if (!step.backward) {
      SmallVector<Value> &args = passed[j][chunk];
      unsigned at = 0;
      for (ParamOp p : params[s])
        if (!o.unused[at++])
          args.push_back(shared.lookup(p.getResult()));
      for (BlockArgument arg : model.getArguments())
        if (!o.unused[at++]) {
          Value &slice = slices[j][arg.getArgNumber()];
          if (!slice)
            slice =
                SliceOp::create(b, loc, cast<RankedTensorType>(arg.getType()),
                                fn.getArgument(arg.getArgNumber()), 0,
                                j * micro, (j + 1) * micro);
          args.push_back(slice);
        }
      for (int64_t i : o.received) {
        Value v = boundary[i];
        held[j][v] =
            receive(b, loc, v.getType(), plan::stageOf(v), j, false, i);
        args.push_back(held[j][v]);
      }
      for (Value v : ArrayRef(o.inputs).drop_front(o.received.size())) {
        // analyze() checked that the chunk that makes it ran first.
        assert(held[j].count(v) && "a chunk's forward before what it reads");
        args.push_back(held[j].lookup(v));
      }
      auto call = func::CallOp::create(b, loc, o.forward, args);
      drawFrom(call);
      kept[j][chunk].assign(call.getResults().begin(), call.getResults().end());
      for (auto [k, i] : llvm::enumerate(o.sent))
        for (int64_t reader : readersOf(boundary[i]))
          send(b, loc, call.getResult(k), reader, j, false, i);
      for (auto [v, k] : llvm::zip(o.handedOn, o.handedOnAt))
        held[j][v] = call.getResult(k);
      if (o.lossAt >= 0)
        losses.push_back(call.getResult(o.lossAt));
      continue;
    }
    SmallVector<Value> args;
    for (const Source &from : o.sources)
      switch (from.kind) {
      case Source::Gradient:
        args.push_back(receive(b, loc, boundary[from.index].getType(),
                               from.peer, j, true, from.index));
        break;
      case Source::LaterGradient:
        // analyze() checked that the chunks reading it ran their backwards.
        assert(gradSums[j].count(from.value) &&
               "a chunk's backward before those of its readers");
        args.push_back(gradSums[j].lookup(from.value));
        break;
      case Source::ForwardArgument:
        args.push_back(passed[j][chunk][from.index]);
        break;
      case Source::ForwardResult:
        args.push_back(kept[j][chunk][from.index]);
        break;
      }
    const bool last = n == lastBackward[chunk];
    SmallVector<Value> results;
    if (last) {
      results = inlineStep(b, o.backward.getBody().front(), args, rows);
    } else {
      auto call = func::CallOp::create(b, loc, o.backward, args);
      drawFrom(call);
      results.assign(call.getResults().begin(), call.getResults().end());
    }
    // The inputs' gradients join what the rank's later chunks gave them;
    // a value received here has all of its gradient now, and goes back.
    for (auto [v, g] : llvm::zip(o.inputs, results)) {
      auto [it, fresh] = gradSums[j].try_emplace(v, g);
      if (!fresh)
        it->second = AddOp::create(b, loc, v.getType(), it->second, g);
    }
    for (int64_t i : o.received)
      send(b, loc, gradSums[j].lookup(boundary[i]), plan::stageOf(boundary[i]),
           j, true, i);
    ArrayRef<Value> gradients =
        ArrayRef<Value>(results).drop_front(o.inputs.size());
    SmallVector<ParamOp> graded;
    for (StringRef name : o.graded)
      graded.push_back(ownByName.lookup(name));
    const bool summing = llvm::all_of(graded, [&](ParamOp own) {
      return accumulated.count(own.getResult());
    });
    if (!summing || last) {
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
      auto call = func::CallOp::create(b, loc, o.accumulate, sums);
      for (auto [own, sum] : llvm::zip(graded, call.getResults()))
        accumulated[own.getResult()] = sum;
    }
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
      int64_t stages = ModelPlan::of(fn).stages().value_or(1);
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
