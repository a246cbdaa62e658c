//===- Extract.cpp - events from the rank programs ------------------------===//

#include "sim/Extract.h"

#include "perfmodel/OpCost.h"

#include "dialects/Whale/IR/TrainAttrs.h"
#include "dialects/Whale/IR/WhaleOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Threading.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <unordered_map>

namespace whale::sim {
namespace {

/// Operand and result types, and the flags that pick a different kernel
/// at the same shapes (a matmul's transposes, which operand a gradient is).
std::string signatureOf(mlir::Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(op->getOperandTypes(), os);
  os << " -> ";
  llvm::interleaveComma(op->getResultTypes(), os);
  for (llvm::StringRef flag :
       {"transpose_lhs", "transpose_rhs", "transpose_weight", "gelu"})
    if (op->hasAttr(flag))
      os << " " << flag;
  if (auto g = llvm::dyn_cast<MatmulGradOp>(op))
    os << " operand " << g.getOperand();
  // A fused region's kernel is what its body computes.
  if (auto f = llvm::dyn_cast<FusedOp>(op))
    os << " {" << f.getBodySignature() << "}";
  return s;
}

/// What signatureOf prints, as the uniqued pointers behind it: cheap to
/// build for every op of a large program (no allocation for up to 8 parts,
/// attributes read only where they pick a kernel), and equal exactly when
/// the signatures are.
struct Identity {
  llvm::SmallVector<uintptr_t, 8> parts;
  bool operator==(const Identity &o) const { return parts == o.parts; }
};
struct IdentityHash {
  size_t operator()(const Identity &i) const {
    return llvm::hash_combine_range(i.parts.begin(), i.parts.end());
  }
};

/// What a fused region's body computes, as getBodySignature says it, but
/// hashed from the uniqued names, properties and attributes of its ops
/// instead of printed: a plan's rank programs hold a region for every
/// layer of every micro-batch.
size_t bodyIdentity(FusedOp f) {
  mlir::Block &body = f.getBody().front();
  // Values numbered by their addresses, which the block's argument list
  // and each op's results give without reading the values themselves: a
  // body's arguments are allocated apart from it, and each read of one
  // is a cache miss in a walk over millions of regions.
  llvm::SmallDenseMap<const void *, unsigned, 32> number;
  for (mlir::BlockArgument a : body.getArguments())
    number[a.getAsOpaquePointer()] = number.size();
  llvm::hash_code h = llvm::hash_value(body.getNumArguments());
  for (mlir::Operation &op : body) {
    h = llvm::hash_combine(h, op.getName().getAsOpaquePointer(),
                           op.hashProperties(),
                           op.getRawDictionaryAttrs().getAsOpaquePointer());
    for (mlir::Value v : op.getOperands())
      h = llvm::hash_combine(h, number.lookup(v.getAsOpaquePointer()));
    for (mlir::Value r : op.getResults())
      number[r.getAsOpaquePointer()] = number.size();
  }
  return h;
}

Identity identityOf(mlir::Operation *op) {
  Identity id;
  auto add = [&](const void *p) {
    id.parts.push_back(reinterpret_cast<uintptr_t>(p));
  };
  add(op->getName().getAsOpaquePointer());
  for (mlir::Type t : op->getOperandTypes())
    add(t.getAsOpaquePointer());
  add(nullptr);
  for (mlir::Type t : op->getResultTypes())
    add(t.getAsOpaquePointer());
  // The flags from the ops' properties, not looked up by name: every
  // matrix product of every micro-batch passes here.
  if (auto m = llvm::dyn_cast<MatmulOp>(op))
    id.parts.push_back((m.getTransposeLhs() ? 1 : 0) |
                       (m.getTransposeRhs() ? 2 : 0));
  if (auto g = llvm::dyn_cast<MatmulGradOp>(op)) {
    id.parts.push_back((g.getTransposeLhs() ? 1 : 0) |
                       (g.getTransposeRhs() ? 2 : 0));
    id.parts.push_back(4 + g.getOperand());
  }
  if (auto l = llvm::dyn_cast<LinearOp>(op))
    id.parts.push_back((l.getTransposeWeight() ? 1 : 0) |
                       (l.getGelu() ? 2 : 0));
  if (auto g = llvm::dyn_cast<LinearWeightGradOp>(op))
    id.parts.push_back(g.getTransposeWeight() ? 1 : 0);
  if (auto g = llvm::dyn_cast<GeluMatmulGradOp>(op))
    id.parts.push_back(g.getTransposeWeight() ? 1 : 0);
  if (auto f = llvm::dyn_cast<FusedOp>(op))
    id.parts.push_back(bodyIdentity(f));
  return id;
}

} // namespace

namespace {

/// A compute event: the op's cost as the device model prices it.
Event computeEvent(mlir::Operation *op, bool bf16) {
  Event e;
  e.op = op->getName().getStringRef().str();
  e.signature = signatureOf(op);
  e.kind = StepKind::Compute;
  e.cost = perf::opCostOf(op, bf16);
  // The same product at bf16 rates is another event: on a GPU it runs on
  // other units at several times the speed, so a profile of a plan without
  // amp must not price it (nor the reverse). The types alone do not tell:
  // amp keeps them fp32 and rounds inside the op.
  if (e.cost.bf16)
    e.signature += " bf16";
  return e;
}

Event commEvent(llvm::StringRef op, std::string signature, StepKind kind,
                Collective c, double bytes,
                GroupKind group = GroupKind::Replicas, int64_t shards = 0) {
  Event e;
  e.op = op.str();
  e.signature = std::move(signature);
  e.kind = kind;
  e.collective = c;
  e.commBytes = bytes;
  e.group = group;
  e.shards = shards;
  return e;
}

std::optional<GroupKind> groupKind(llvm::StringRef name) {
  if (name == "replicas")
    return GroupKind::Replicas;
  if (name == "stages")
    return GroupKind::Stages;
  if (name == "shard_peers")
    return GroupKind::ShardPeers;
  return std::nullopt;
}

class Extractor {
public:
  Extractor(EventTable &table, StageProgram &program, bool bf16,
            int64_t replicas, int64_t sharding,
            std::vector<mlir::Operation *> *firstOps)
      : table(table), program(program), bf16(bf16), replicas(replicas),
        sharding(sharding), firstOps(firstOps) {}

  bool add(mlir::Operation *op, int32_t position, std::string &error);
  bool call(mlir::func::CallOp call, int32_t &position, std::string &error);

private:
  void step(Event e, int32_t peer = -1, int32_t tag = 0,
            mlir::Operation *op = nullptr) {
    Step s;
    s.event = table.intern(std::move(e));
    if (firstOps) {
      if (firstOps->size() <= s.event)
        firstOps->resize(s.event + 1, nullptr);
      if (!(*firstOps)[s.event])
        (*firstOps)[s.event] = op;
    }
    const Event &ev = table[s.event];
    if (ev.kind == StepKind::Send || ev.kind == StepKind::Recv) {
      s.peer = peer;
      s.tag = tag;
    }
    if (ev.kind == StepKind::Collective)
      s.sequence = sequence[{ev.group, ev.shards}]++;
    program.steps.push_back(s);
  }
  void collective(llvm::StringRef op, Collective c, double bytes,
                  GroupKind group, int64_t shards, int64_t cut = 0) {
    std::string sig = std::to_string(static_cast<int64_t>(bytes)) + " bytes";
    Event e = commEvent(op, sig, StepKind::Collective, c, bytes, group, shards);
    e.sharding = cut;
    step(std::move(e));
  }
  /// The members of a sharding group ("hsdp") of the replicas, or with
  /// `shards` of the shard peers.
  int64_t shardingMembers(std::optional<int64_t> shards) const {
    return shards ? sharding / std::max<int64_t>(1, *shards) : sharding;
  }

  /// A collective of `op` at `position` over its named group (shards for
  /// shard peers); false with `error` for a group the replay does not know.
  bool groupCollective(mlir::Operation *op, llvm::StringRef name,
                       Collective c, double bytes, llvm::StringRef group,
                       std::optional<int64_t> shards, int32_t position,
                       std::string &error) {
    // A sharding group cuts the replicas, or with shards the shard peers.
    const bool cut = group == "hsdp";
    std::optional<GroupKind> g = !cut     ? groupKind(group)
                                 : shards ? GroupKind::ShardPeers
                                          : GroupKind::Replicas;
    if (!g) {
      error = "'" + op->getName().getStringRef().str() +
              "' over an unknown group '" + group.str() + "'";
      return false;
    }
    collective(name, c, bytes, *g,
               *g == GroupKind::ShardPeers ? shards.value_or(0) : 0,
               cut ? shardingMembers(shards) : 0);
    program.steps.back().site = position;
    return true;
  }

  /// A bucket's sums over a group: all-reduced, or reduced to their owners
  /// (each member sends the parts it does not own, as a reduce-scatter of
  /// the bucket does; the owners are dealt out evenly).
  bool sumCollective(mlir::Operation *op, bool toOwners, llvm::StringRef group,
                     std::optional<int64_t> shards, int32_t position,
                     std::string &error) {
    return toOwners ? groupCollective(op, "whale.reduce_to_owners",
                                      Collective::ReduceScatter,
                                      operandBytes(op), group, shards,
                                      position, error)
                    : groupCollective(op, "whale.all_reduce",
                                      Collective::AllReduce, operandBytes(op),
                                      group, shards, position, error);
  }

  /// The event of an op seen before (a later micro-batch's), by identity;
  /// a message's with its peer and tag (peer >= 0).
  bool seenBefore(mlir::Operation *op, int32_t peer = -1, int32_t tag = 0) {
    auto it = seen.find(identityOf(op));
    if (it == seen.end())
      return false;
    Step s;
    s.event = it->second;
    if (peer >= 0) {
      s.peer = peer;
      s.tag = tag;
    }
    program.steps.push_back(s);
    return true;
  }
  /// A message to or from `stage`, tagged `tag`.
  bool message(mlir::Operation *op, bool send, int64_t stage, int64_t tag,
               mlir::Type type, std::string &error) {
    // A step keeps both in 32 bits: the planner's tags reach 2^31 only
    // past a quarter million micro-batches.
    if (stage < 0 || stage > INT32_MAX || tag < INT32_MIN || tag > INT32_MAX) {
      error = "'" + op->getName().getStringRef().str() + "' to stage " +
              std::to_string(stage) + " tagged " + std::to_string(tag) +
              ": the simulator keeps both in 32 bits";
      return false;
    }
    if (seenBefore(op, int32_t(stage), int32_t(tag)))
      return true;
    step(commEvent(send ? "whale.send" : "whale.recv", signatureOf(op),
                   send ? StepKind::Send : StepKind::Recv, Collective::SendRecv,
                   tensorBytes(type)),
         int32_t(stage), int32_t(tag));
    remember(op);
    return true;
  }
  void remember(mlir::Operation *op) {
    seen.emplace(identityOf(op), program.steps.back().event);
  }

  EventTable &table;
  StageProgram &program;
  bool bf16;
  int64_t replicas; ///< of the stage, which updates' owners are among
  int64_t sharding; ///< replicas a sharding group (shard_group; 0: all)
  std::unordered_map<Identity, uint32_t, IdentityHash> seen;
  std::vector<mlir::Operation *> *firstOps;
  std::map<std::pair<GroupKind, int64_t>, uint32_t> sequence;
  /// Each started all-reduce's request: its place among the starts.
  llvm::DenseMap<mlir::Value, int32_t> requests;
  int32_t nextRequest = 0;
  /// Each callee's steps, as read at its first call: where they stand in
  /// the program, the site of its first op then, and how many ops it adds.
  struct Callee {
    size_t begin = 0, end = 0;
    int32_t site = 0, ops = 0;
  };
  llvm::DenseMap<mlir::Attribute, Callee> callees;
};

/// A call of a step the planner outlined (a micro-batch's forward or
/// backward of one stage chunk): the callee's steps, read at its first
/// call and appended again at each later one, each collective given its
/// place among the program's. Sites count the callee's ops as if its body
/// stood in place of the call, as the runtime's lowering inlines it, so
/// a traced run names each op's time by the site the reader gave it.
bool Extractor::call(mlir::func::CallOp call, int32_t &position,
                     std::string &error) {
  // Keyed by the callee's (uniqued) name: a symbol lookup scans the
  // module, and a large plan makes a thousand calls a stage.
  auto [it, first] = callees.try_emplace(call.getCalleeAttr());
  if (first) {
    auto callee =
        mlir::SymbolTable::lookupNearestSymbolFrom<mlir::func::FuncOp>(
            call, call.getCalleeAttr());
    if (!callee || callee.getBody().empty()) {
      error = "a call of '" + call.getCallee().str() +
              "', which the module does not define";
      return false;
    }
    Callee read;
    read.begin = program.steps.size();
    read.site = position;
    for (mlir::Operation &op : callee.getBody().front().without_terminator()) {
      // A step's messages and started sums stay in the caller: their tags
      // and requests differ from call to call.
      if (llvm::isa<mlir::func::CallOp, SendOp, RecvOp, AllReduceStartOp,
                    AllReduceWaitOp, GatherParamsStartOp, GatherParamsWaitOp>(
              op)) {
        error = "'" + op.getName().getStringRef().str() + "' in '" +
                call.getCallee().str() +
                "', a step the rank program calls (it belongs in the caller)";
        return false;
      }
      if (!add(&op, position++, error))
        return false;
    }
    read.end = program.steps.size();
    read.ops = position - read.site;
    it->second = read;
    return true;
  }
  const Callee read = it->second;
  const int32_t shift = position - read.site;
  program.steps.reserve(program.steps.size() + (read.end - read.begin));
  for (size_t i = read.begin; i < read.end; ++i) {
    Step s = program.steps[i];
    if (s.site >= 0)
      s.site += shift;
    const Event &ev = table[s.event];
    if (ev.kind == StepKind::Collective)
      s.sequence = sequence[{ev.group, ev.shards}]++;
    program.steps.push_back(s);
  }
  position += read.ops;
  return true;
}

bool Extractor::add(mlir::Operation *op, int32_t position, std::string &error) {
  // Parameters are state the step updates in place, not work of the step.
  if (llvm::isa<ParamOp, mlir::func::ReturnOp>(op))
    return true;
  // A started all-reduce: the rank packs its bucket, and its collective
  // thread sums it while the rank goes on; the wait blocks until then and
  // unpacks the sums. Both halves are compute of the op's site; the sum is
  // the blocking all-reduce's event, run aside.
  if (auto start = llvm::dyn_cast<AllReduceStartOp>(op)) {
    step(computeEvent(op, bf16), -1, 0, op);
    program.steps.back().site = position;
    if (!sumCollective(op, start.getOwners().has_value(), start.getGroup(),
                       start.getShards(), position, error))
      return false;
    Step &s = program.steps.back();
    s.request = nextRequest;
    requests[start.getPending()] = nextRequest++;
    return true;
  }
  // A gather started a layer ahead (stage 3): the owner packs its part, the
  // collective thread gathers the bucket; the wait unpacks it.
  if (auto start = llvm::dyn_cast<GatherParamsStartOp>(op)) {
    step(computeEvent(op, bf16), -1, 0, op);
    program.steps.back().site = position;
    if (!groupCollective(op, "whale.gather_params", Collective::AllGather,
                         start.bucketBytes(), start.getGroup(),
                         start.getShards(), position, error))
      return false;
    Step &s = program.steps.back();
    s.request = nextRequest;
    requests[start.getPending()] = nextRequest++;
    return true;
  }
  if (auto wait = llvm::dyn_cast<GatherParamsWaitOp>(op)) {
    auto it = requests.find(wait.getPending());
    if (it == requests.end()) {
      error = "a gather_params_wait before its gather_params_start";
      return false;
    }
    step(commEvent("whale.gather_params_wait", "", StepKind::Wait,
                   Collective::AllGather, 0));
    program.steps.back().request = it->second;
    step(computeEvent(op, bf16), -1, 0, op);
    program.steps.back().site = position;
    return true;
  }
  if (auto wait = llvm::dyn_cast<AllReduceWaitOp>(op)) {
    auto it = requests.find(wait.getPending());
    if (it == requests.end()) {
      error = "an all_reduce_wait before its all_reduce_start";
      return false;
    }
    step(commEvent("whale.all_reduce_wait", "", StepKind::Wait,
                   Collective::AllReduce, 0));
    program.steps.back().request = it->second;
    step(computeEvent(op, bf16), -1, 0, op);
    program.steps.back().site = position;
    return true;
  }
  // A compute op of a kind and shapes seen before (a later micro-batch's):
  // its event again, before any interface is asked (only ops that move
  // nothing are remembered so; messages are, with their peer and tag).
  // An update one member of a group takes (ZeRO-1) carries its owner; most
  // ops carry no attribute beyond their own, which is checked first.
  const bool owned =
      !op->getRawDictionaryAttrs().empty() && op->getDiscardableAttr("owner");
  if (!llvm::isa<SendOp, RecvOp>(op) && !owned && seenBefore(op)) {
    program.steps.back().site = position;
    return true;
  }
  if (auto s = llvm::dyn_cast<SendOp>(op))
    return message(op, true, s.getStage(), s.getTag(), s.getValue().getType(),
                   error);
  if (auto r = llvm::dyn_cast<RecvOp>(op))
    return message(op, false, r.getStage(), r.getTag(), r.getType(), error);
  if (auto ar = llvm::dyn_cast<AllReduceOp>(op))
    return sumCollective(op, ar.getOwners().has_value(), ar.getGroup(),
                         ar.getShards(), position, error);
  // Optimizer state sharded over a group: each owner's parameters to the
  // others, as an all-gather of the bucket (the owners dealt out evenly).
  if (auto bc = llvm::dyn_cast<BroadcastOp>(op))
    return groupCollective(op, "whale.broadcast", Collective::AllGather,
                           operandBytes(op), bc.getGroup(), bc.getShards(),
                           position, error);
  // One member of the group takes an owned update (ZeRO-1) or adds an
  // owned gradient (stage 2's addition into the owners' sums): each rank,
  // on average, 1/n of the group's (the owners are dealt out evenly).
  auto onOneOfGroup = [&](Event &e) {
    auto shards = op->getAttrOfType<mlir::IntegerAttr>("shards");
    auto group = op->getAttrOfType<mlir::StringAttr>("group");
    std::optional<int64_t> k;
    if (shards)
      k = shards.getInt();
    const double n = double(std::max<int64_t>(
        1, group && group.getValue() == "hsdp"
               ? shardingMembers(k)
               : (k ? replicas / std::max<int64_t>(1, *k) : replicas)));
    e.cost.flops /= n;
    e.cost.bytes /= n;
    e.signature += " on 1 of " + std::to_string(int64_t(n));
  };
  if (llvm::isa<AddIntoOwnersOp>(op)) {
    Event e = computeEvent(op, bf16);
    onOneOfGroup(e);
    step(std::move(e), -1, 0, op);
    program.steps.back().site = position;
    return true;
  }
  // Parameters sharded over a group (stage 3): a layer gathered from its
  // owners before it computes, the same all-gather of the bucket.
  if (auto gather = llvm::dyn_cast<GatherParamsOp>(op))
    return groupCollective(op, "whale.gather_params", Collective::AllGather,
                           gather.bucketBytes(), gather.getGroup(),
                           gather.getShards(), position, error);
  auto cost = llvm::dyn_cast<CostOpInterface>(op);
  if (!cost) {
    error = "the simulator cannot price '" +
            op->getName().getStringRef().str() + "' (no cost model)";
    return false;
  }
  if (auto gather = llvm::dyn_cast<AllGatherOp>(op)) {
    collective("whale.all_gather", Collective::AllGather,
               tensorBytes(gather.getType()), GroupKind::ShardGroup,
               gather.getShards());
    program.steps.back().site = position;
    return true;
  }
  if (auto a2a = llvm::dyn_cast<AllToAllOp>(op)) {
    collective("whale.all_to_all", Collective::AllToAll,
               tensorBytes(a2a.getType()), GroupKind::ShardGroup,
               a2a.getShards());
    program.steps.back().site = position;
    return true;
  }
  if (auto sum = llvm::dyn_cast<ShardSumOp>(op)) {
    collective("whale.shard_sum", Collective::AllReduce,
               tensorBytes(sum.getType()), GroupKind::ShardGroup,
               sum.getShards());
    program.steps.back().site = position;
    return true;
  }
  int64_t commBytes = cost.getCommBytes();
  bool plain = commBytes == 0 && !owned &&
               !llvm::isa<ClipGradNormOp, BatchNormOp, BatchNormGradOp>(op);
  if (!plain || !seenBefore(op)) {
    Event e = computeEvent(op, bf16);
    if (owned)
      onOneOfGroup(e);
    step(std::move(e), -1, 0, op);
    if (plain)
      remember(op);
  }
  program.steps.back().site = position;
  if (plain)
    return true;
  // The sharded cross entropy's max and sums over the group.
  if (int64_t bytes = commBytes) {
    auto shards = op->getAttrOfType<mlir::IntegerAttr>("shards");
    if (!shards) {
      error = "'" + op->getName().getStringRef().str() +
              "' communicates but names no shard group";
      return false;
    }
    collective(op->getName().getStringRef(), Collective::AllReduce,
               static_cast<double>(bytes), GroupKind::ShardGroup,
               shards.getInt());
  }
  // Batch normalization adds its f64 channel sums over the replicas: with
  // a count for the mean, then the centred squares; its gradient two sums
  // and a count.
  if (auto bn = llvm::dyn_cast<BatchNormOp>(op)) {
    double channels = double(bn.getGamma().getType().getNumElements());
    collective("whale.batch_norm", Collective::AllReduce, 8 * (channels + 1),
               GroupKind::Replicas, 0);
    collective("whale.batch_norm", Collective::AllReduce, 8 * channels,
               GroupKind::Replicas, 0);
  }
  if (auto bn = llvm::dyn_cast<BatchNormGradOp>(op))
    collective("whale.batch_norm_grad", Collective::AllReduce,
               8.0 * double(2 * bn.getGamma().getType().getNumElements() + 1),
               GroupKind::Replicas, 0);
  // Clipping sums its squares over the stages and the shard group.
  if (auto clip = llvm::dyn_cast<ClipGradNormOp>(op)) {
    // Owned gradients' squares, summed over the replicas that own them
    // (those of one sharding group under hybrid sharding).
    if (clip.getOwners())
      collective("whale.clip_grad_norm", Collective::AllReduce, 8,
                 GroupKind::Replicas, 0, sharding);
    if (std::optional<int64_t> shards = clip.getShards())
      collective("whale.clip_grad_norm", Collective::AllReduce, 8,
                 GroupKind::ShardGroup, *shards);
    if (std::optional<llvm::StringRef> group = clip.getGroup()) {
      std::optional<GroupKind> g = groupKind(*group);
      if (!g) {
        error = "clip_grad_norm over an unknown group '" + group->str() + "'";
        return false;
      }
      collective("whale.clip_grad_norm", Collective::AllReduce, 8, *g, 0);
    }
  }
  return true;
}

/// One stage's program read on its own, with the events it met in the
/// order it met them.
struct StageRead {
  EventTable table;
  StageProgram program;
  std::vector<mlir::Operation *> firstOps;
  std::string error;
};

/// Reads `fn`, stage `stage`, into `read`; an op it cannot price leaves
/// its error there.
void readStage(mlir::func::FuncOp fn, int64_t stage, bool wantFirstOps,
               StageRead &read) {
  read.program.name = fn.getSymName().str();
  read.program.stage = stage;
  auto rank = fn->getAttrOfType<mlir::DictionaryAttr>("whale.rank");
  auto replicas = rank ? rank.getAs<mlir::IntegerAttr>("replicas") : nullptr;
  Extractor extractor(
      read.table, read.program, ampBf16(fn), replicas ? replicas.getInt() : 1,
      settingsOf(fn).shardingGroup(), wantFirstOps ? &read.firstOps : nullptr);
  int32_t position = 0;
  for (mlir::Operation &op : fn.getBody().front()) {
    auto call = llvm::dyn_cast<mlir::func::CallOp>(op);
    if (call ? !extractor.call(call, position, read.error)
             : !extractor.add(&op, position++, read.error)) {
      read.error = read.program.name + ": " + read.error;
      return;
    }
  }
}

} // namespace

bool extractPrograms(mlir::ModuleOp ranks, const std::string &model,
                     int64_t stages, EventTable &table, ProgramSet &out,
                     std::string &error,
                     std::vector<mlir::Operation *> *firstOps) {
  out.stages.clear();
  std::vector<mlir::func::FuncOp> fns;
  for (int64_t s = 0; s < stages; ++s) {
    std::string name = model + "_stage" + std::to_string(s);
    auto fn = ranks.lookupSymbol<mlir::func::FuncOp>(name);
    if (!fn || fn.getBody().empty()) {
      error = "the plan has no rank program '" + name + "'";
      return false;
    }
    fns.push_back(fn);
  }
  // The stages are read side by side on the context's threads: a plan of
  // many micro-batches unrolls millions of ops, and walking them is most of
  // the simulation. Each stage interns into a table of its own; the tables
  // are merged in stage order, which numbers the events as one reader
  // going through the stages in turn would.
  std::vector<StageRead> reads(fns.size());
  mlir::parallelFor(ranks.getContext(), 0, fns.size(), [&](size_t s) {
    readStage(fns[s], static_cast<int64_t>(s), firstOps != nullptr, reads[s]);
  });
  for (StageRead &read : reads)
    if (!read.error.empty()) {
      error = read.error;
      return false;
    }
  for (StageRead &read : reads) {
    std::vector<uint32_t> global(read.table.size());
    for (uint32_t e = 0; e < read.table.size(); ++e) {
      global[e] = table.intern(read.table[e]);
      if (!firstOps || e >= read.firstOps.size() || !read.firstOps[e])
        continue;
      if (firstOps->size() <= global[e])
        firstOps->resize(global[e] + 1, nullptr);
      if (!(*firstOps)[global[e]])
        (*firstOps)[global[e]] = read.firstOps[e];
    }
    for (Step &step : read.program.steps)
      step.event = global[step.event];
    out.stages.push_back(std::move(read.program));
  }
  return true;
}

} // namespace whale::sim
