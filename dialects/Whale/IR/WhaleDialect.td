//===- WhaleDialect.td - the whale dialect ---------------------*- tablegen -*-===//

#ifndef WHALE_DIALECT
#define WHALE_DIALECT

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Whale_Dialect : Dialect {
  let name = "whale";
  let summary = "Local models annotated for distributed training";
  let description = [{
    The whale dialect holds a model as the user wrote it: compute ops on
    statically shaped tensors, trainable parameters named by their call path,
    and `whale.taskgraph` regions that mark which parts are replicated (data
    parallel) and which are split (tensor parallel). Later passes plan, shard
    and schedule this IR into per-rank programs.

    Module attributes carry the script's `config` and `train` blocks as
    dictionaries (`whale.config`, `whale.train`); the dialect verifies their
    keys.
  }];
  let cppNamespace = "::whale";
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let hasOperationAttrVerify = 1;
}

class Whale_Op<string mnemonic, list<Trait> traits = []>
    : Op<Whale_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def Whale_PendingType : TypeDef<Whale_Dialect, "Pending"> {
  let mnemonic = "pending";
  let summary = "A collective under way: what its wait ends";
  let description = [{
    The value `whale.all_reduce_start` makes and `whale.all_reduce_wait`
    takes: the operation runs between the two while the rank goes on.
  }];
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Whale_StrategyReplicate : I32EnumAttrCase<"replicate", 0>;
def Whale_StrategySplit : I32EnumAttrCase<"split", 1>;
def Whale_Strategy : I32EnumAttr<"Strategy",
    "how a TaskGraph uses its devices",
    [Whale_StrategyReplicate, Whale_StrategySplit]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::whale";
}
def Whale_StrategyAttr : EnumAttr<Whale_Dialect, Whale_Strategy, "strategy"> {
  let assemblyFormat = "$value";
}

def Whale_InitZeros : I32EnumAttrCase<"zeros", 0>;
def Whale_InitOnes : I32EnumAttrCase<"ones", 1>;
def Whale_InitNormal : I32EnumAttrCase<"normal", 2>;
def Whale_InitUniform : I32EnumAttrCase<"uniform", 3>;
def Whale_InitXavier : I32EnumAttrCase<"xavier", 4>;
def Whale_InitKind : I32EnumAttr<"InitKind",
    "how a parameter is initialized",
    [Whale_InitZeros, Whale_InitOnes, Whale_InitNormal, Whale_InitUniform,
     Whale_InitXavier]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::whale";
}
def Whale_InitKindAttr : EnumAttr<Whale_Dialect, Whale_InitKind, "init"> {
  let assemblyFormat = "$value";
}

// The kinds of elementwise and reduction ops, for the gradient ops that
// serve a whole family.
def Whale_UnaryKind : I32EnumAttr<"UnaryKind", "an elementwise function", [
    I32EnumAttrCase<"neg", 0>, I32EnumAttrCase<"relu", 1>,
    I32EnumAttrCase<"gelu", 2>, I32EnumAttrCase<"tanh", 3>,
    I32EnumAttrCase<"exp", 4>, I32EnumAttrCase<"log", 5>,
    I32EnumAttrCase<"sqrt", 6>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::whale";
}
def Whale_UnaryKindAttr : EnumAttr<Whale_Dialect, Whale_UnaryKind, "unary">;

def Whale_BinaryKind : I32EnumAttr<"BinaryKind", "an elementwise operator", [
    I32EnumAttrCase<"add", 0>, I32EnumAttrCase<"sub", 1>,
    I32EnumAttrCase<"mul", 2>, I32EnumAttrCase<"div", 3>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::whale";
}
def Whale_BinaryKindAttr : EnumAttr<Whale_Dialect, Whale_BinaryKind, "binary">;

def Whale_ReduceKind : I32EnumAttr<"ReduceKind", "a reduction", [
    I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"mean", 1>,
    I32EnumAttrCase<"max", 2>]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::whale";
}
def Whale_ReduceKindAttr : EnumAttr<Whale_Dialect, Whale_ReduceKind, "reduce">;

// The settings' and the plan's choices. Each prints as the config block
// spells it ("1f1b", "after_backward"); the symbols are C++ names.
class Whale_SettingEnum<string name, string summary, list<I32EnumAttrCase> cases>
    : I32EnumAttr<name, summary, cases> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::whale";
}
def Whale_PipelineSchedule : Whale_SettingEnum<"PipelineSchedule",
    "a pipeline's order of forward and backward steps", [
    I32EnumAttrCase<"gpipe", 0>, I32EnumAttrCase<"one_f_one_b", 1, "1f1b">]>;
def Whale_BalanceKind : Whale_SettingEnum<"BalanceKind",
    "how the planner shares the batch out", [
    I32EnumAttrCase<"even", 0>, I32EnumAttrCase<"hardware", 1>,
    // In a plan only: the shares the script's weights gave.
    I32EnumAttrCase<"given", 2>]>;
def Whale_SplitMatmul : Whale_SettingEnum<"SplitMatmul",
    "how a split TaskGraph cuts its matrix products", [
    I32EnumAttrCase<"automatic", 0, "auto">, I32EnumAttrCase<"column", 1>,
    I32EnumAttrCase<"row", 2>, I32EnumAttrCase<"replicated", 3>]>;
def Whale_SplitRows : Whale_SettingEnum<"SplitRows",
    "whether a shard group shares its rows of the batch", [
    I32EnumAttrCase<"part", 0>, I32EnumAttrCase<"whole", 1>]>;
def Whale_AmpMode : Whale_SettingEnum<"AmpMode", "mixed precision", [
    I32EnumAttrCase<"off", 0>, I32EnumAttrCase<"bf16", 1>]>;
def Whale_GradSync : Whale_SettingEnum<"GradSync",
    "when data-parallel gradients are summed", [
    I32EnumAttrCase<"overlap", 0>, I32EnumAttrCase<"after_backward", 1>]>;
def Whale_GatherEvery : Whale_SettingEnum<"GatherEvery",
    "how often sharded parameters are gathered", [
    I32EnumAttrCase<"micro_batch", 0>, I32EnumAttrCase<"step", 1>]>;

//===----------------------------------------------------------------------===//
// The plan's settings and a pipeline stage's schedule
//===----------------------------------------------------------------------===//

class Whale_Attr<string name, string attrMnemonic>
    : AttrDef<Whale_Dialect, name> {
  let mnemonic = attrMnemonic;
}

def Whale_SettingsAttr : Whale_Attr<"Settings", "settings"> {
  let summary = "The script's config block, checked once";
  let description = [{
    What the `config` block asks of the planner, the value of the module's
    `whale.config`. Every pass reads it through its typed accessors, so the
    planner, the lowering to the runtime and the simulator read the same
    checked values; the choices are enums. An integer of 0, a false flag
    and an absent choice mean the config does not say; the textual form
    lists only what it says:

      #whale.settings<num_micro_batch = 4, schedule = "1f1b", recompute = true>

    Keys: num_micro_batch, num_task_graph, task_graph_split, bucket_bytes
    (positive integers), auto_parallel, recompute, shard_optimizer,
    shard_gradients, shard_parameters (true or false), schedule ("gpipe", "1f1b"), balance ("even", "hardware"),
    split_matmul ("auto", "column", "row", "replicated"), split_rows
    ("part", "whole"), amp ("off", "bf16"), grad_sync ("overlap",
    "after_backward"), virtual_stages (a positive integer: the model chunks
    each pipeline rank holds, Megatron-LM's interleaved schedule),
    gather_layers (a positive integer: under shard_parameters, the layers
    gathered together), shard_group (a positive integer: the ranks of a
    stage that shard among themselves, hybrid sharding; groups of that
    many consecutive replicas hold copies of each other's shards),
    gather_every ("micro_batch", "step": under shard_parameters, a layer
    gathered before each micro-batch's forward and backward, or once a
    step and kept; unset, the plan keeps them where the devices' memory
    holds them).
  }];
  let parameters = (ins
    DefaultValuedParameter<"int64_t", "0">:$numMicroBatch,
    DefaultValuedParameter<"int64_t", "0">:$numTaskGraph,
    DefaultValuedParameter<"int64_t", "0">:$taskGraphSplit,
    DefaultValuedParameter<"int64_t", "0">:$bucketBytes,
    DefaultValuedParameter<"bool", "false">:$autoParallel,
    DefaultValuedParameter<"bool", "false">:$recompute,
    DefaultValuedParameter<"bool", "false">:$shardOptimizer,
    DefaultValuedParameter<"bool", "false">:$shardParameters,
    DefaultValuedParameter<"bool", "false">:$shardGradients,
    OptionalParameter<"std::optional<::whale::PipelineSchedule>">:$schedule,
    OptionalParameter<"std::optional<::whale::BalanceKind>">:$balance,
    OptionalParameter<"std::optional<::whale::SplitMatmul>">:$splitMatmul,
    OptionalParameter<"std::optional<::whale::SplitRows>">:$splitRows,
    OptionalParameter<"std::optional<::whale::AmpMode>">:$amp,
    OptionalParameter<"std::optional<::whale::GradSync>">:$gradSync,
    DefaultValuedParameter<"int64_t", "0">:$virtualStages,
    DefaultValuedParameter<"int64_t", "0">:$gatherLayers,
    DefaultValuedParameter<"int64_t", "0">:$shardGroup,
    OptionalParameter<"std::optional<::whale::GatherEvery>">:$gatherEvery);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The micro-batches per step: the config's, else 1.
    int64_t microBatches() const {
      return getNumMicroBatch() > 0 ? getNumMicroBatch() : 1;
    }
    bool gpipe() const { return getSchedule() == PipelineSchedule::gpipe; }
    /// The model chunks each pipeline rank holds: the config's, else 1.
    int64_t chunks() const {
      return getVirtualStages() > 0 ? getVirtualStages() : 1;
    }
    bool even() const { return getBalance() == BalanceKind::even; }
    /// The ranks of a shard group read the same rows of the batch
    /// (Megatron-LM's layout) instead of each its own.
    bool wholeRows() const { return getSplitRows() == SplitRows::whole; }
    /// The gradient sums run during the backward (the default), not after
    /// the whole of it.
    bool overlapGradSync() const {
      return getGradSync() != GradSync::after_backward;
    }
    /// Each replicated parameter's optimizer state on one of the replicas
    /// that sum its gradient: ZeRO stage 1 (shard_optimizer), and under
    /// stage 3 (shard_parameters) as well.
    bool shardsOptimizerState() const {
      return getShardOptimizer() || getShardParameters() ||
             getShardGradients();
    }
    /// Layers gathered together under shard_parameters: the config's,
    /// else 1.
    int64_t layersGathered() const {
      return getGatherLayers() > 0 ? getGatherLayers() : 1;
    }
    /// Hybrid sharding (HSDP): the replicas shard in groups of
    /// shard_group, and each group holds a copy of the others' shards;
    /// 0 where the config does not cut the replicas.
    int64_t shardingGroup() const {
      return shardsOptimizerState() ? getShardGroup() : 0;
    }
    /// Matrix products in bf16 (amp = "bf16").
    bool bf16() const { return getAmp() == AmpMode::bf16; }
    /// The settings a dictionary of config keys gives (integers, bools and
    /// strings, as the front end builds them); null after `emitError`
    /// when a key is unknown or a value of the wrong kind.
    static SettingsAttr fromDictionary(
        ::mlir::DictionaryAttr config,
        ::llvm::function_ref<::mlir::InFlightDiagnostic()> emitError);
  }];
}

def Whale_ScheduleAttr : Whale_Attr<"Schedule", "schedule"> {
  let summary = "A pipeline stage's order of forward and backward steps";
  let description = [{
    The steps a stage runs in one training step, each the forward (F) or
    backward (B) of one micro-batch, in order:

      #whale.schedule<F0 F1 B0 F2 B1 B2>

    Under an interleaved schedule a stage holds several model chunks, and
    a step names its chunk after a dot (none is chunk 0):

      #whale.schedule<F0 F1 F0.1 F1.1 B0.1 B1.1 B0 B1>

    Verified: on each chunk, micro-batches 0 to m-1 each have one forward
    and one backward, in increasing order, and each backward comes after
    its forward; every chunk runs the same m. -whale-pipeline writes it on
    each TaskGraph (the TaskGraphs of one stage carry the stage's whole
    schedule); the rank programs follow it.
  }];
  let parameters = (ins ArrayRefParameter<"::whale::ScheduleStep">:$steps);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The model chunks the stage holds: 1 unless the schedule interleaves.
    int64_t chunks() const {
      int64_t most = 0;
      for (const ::whale::ScheduleStep &step : getSteps())
        most = std::max(most, step.chunk);
      return most + 1;
    }
    int64_t microBatches() const {
      return getSteps().size() / (2 * chunks());
    }
  }];
}


//===----------------------------------------------------------------------===//
// The devices a plan is for
//===----------------------------------------------------------------------===//

def Whale_DeviceAttr : Whale_Attr<"Device", "device"> {
  let summary = "One device of the cluster a plan is for";
  let description = [{
    What the planner, the balancer and the simulator know of a device
    (perfmodel/DeviceSpeed.h's DeviceDescription): its rate in FLOP/s, its
    memory limit in bytes (0: none), whether it is a GPU, its threads, its
    data sheet's name (`model`, "" for none), its share of its GPU's SMs
    (`sms`, 0: all), the contexts side by side on its GPU (`contexts`,
    1: a GPU of its own) and a CPU device's share of its cores' time
    (`share`, cpu:N@share=S; absent: whole), and its memory's measured
    bandwidth in bytes a second (`bandwidth`; absent: the model's
    estimate). Its rate and bandwidth are already the share's; without a
    measured bandwidth the share scales the estimate. The textual form
    lists what differs from those defaults:

      #whale.device<flops = 1.0e13, memory = 1024, gpu = true, model = "H100">
  }];
  let parameters = (ins
    "::mlir::FloatAttr":$flops,
    DefaultValuedParameter<"int64_t", "0">:$memory,
    DefaultValuedParameter<"bool", "false">:$gpu,
    DefaultValuedParameter<"int64_t", "1">:$threads,
    StringRefParameter<"a data sheet's name", "\"\"">:$model,
    DefaultValuedParameter<"int64_t", "0">:$sms,
    DefaultValuedParameter<"int64_t", "1">:$contexts,
    OptionalParameter<"::mlir::FloatAttr">:$share,
    OptionalParameter<"::mlir::FloatAttr">:$bandwidth);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Whale_ClusterAttr : Whale_Attr<"Cluster", "cluster"> {
  let summary = "The devices a plan is for, in rank order";
  let description = [{
    The module's `whale.cluster`, written by the planner and read by the
    partition, the balancer and the simulator
    (lowering/Transforms/Parallel/ClusterView.h):

      #whale.cluster<[#whale.device<flops = 3.0e4>, #whale.device<flops = 1.0e4>]>
  }];
  let parameters = (ins ArrayRefParameter<"DeviceAttr", "the devices">:$devices);
  let assemblyFormat = "`<` `[` $devices `]` `>`";
  let genVerifyDecl = 1;
}

#endif // WHALE_DIALECT
