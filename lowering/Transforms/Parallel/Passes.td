//===- Passes.td - planning, partitions, rank programs ---*- tablegen -*-===//
//
// Part of lowering/Passes.td, which defines WhalePass and includes every
// folder's part.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_TRANSFORMS_PARALLEL_PASSES
#define WHALE_LOWERING_TRANSFORMS_PARALLEL_PASSES

def WhaleAnnotateCost : WhalePass<"whale-annotate-cost"> {
  let summary = "Attach the cost model's numbers to every op";
  let description = [{
    Asks every op that implements the cost interface for its FLOPs, bytes read
    and written and output memory, and attaches them as a `whale.cost`
    dictionary. TaskGraphs and model functions get the totals of their bodies.
    This makes the one cost model visible and testable; the planner, the
    balancer and the simulator query the same interface directly.
  }];
  let options = [
    Option<"totalsOnly", "totals-only", "bool", /*default=*/"false",
           "Annotate only TaskGraphs and functions, not each op">,
  ];
}

def WhaleTaskGraphPartition : WhalePass<"whale-taskgraph-partition"> {
  let summary = "Put every op of each model in a TaskGraph";
  let description = [{
    Ops the script left outside `replicate`/`split` blocks join a TaskGraph
    of the model's default strategy (`replicate` over every device unless the
    model says otherwise), one per run of such ops. With `auto_parallel`
    (the config's, or the option), the model is cut afresh into
    `num_task_graph` contiguous TaskGraphs, each parameter going with its
    first user: of the cuts whose every stage fits its device's memory (from
    `whale.cluster`, with the stages in -whale-balance's memory order), the
    one whose slowest stage is fastest: each op and its backward priced by
    the device model of the stage's slowest device (perfmodel/StepCost.h,
    perfmodel/DeviceSpeed.h), as -whale-balance prices them. The cut is
    recorded as the model's `whale.cut` (the op count at which each part
    ends); `ends` makes that cut again. With
    `task_graph_split` = c (the config's, or the option) every part is a
    `split(c)` TaskGraph: c devices per stage and copy.
  }];
  let options = [
    Option<"autoParallel", "auto-parallel", "bool", /*default=*/"false",
           "Cut the model into num-task-graph parts by step time">,
    Option<"numTaskGraph", "num-task-graph", "int64_t", /*default=*/"0",
           "How many TaskGraphs auto_parallel makes (0: the config's)">,
    Option<"splitDevices", "split", "int64_t", /*default=*/"0",
           "Each part auto_parallel makes is split over this many devices "
           "(0: the config's task_graph_split, else not split)">,
    ListOption<"givenEnds", "ends", "int64_t",
               "Cut here (a whale.cut of an earlier run) instead of choosing">,
  ];
}

def WhaleVirtualDevices : WhalePass<"whale-virtual-devices"> {
  let summary = "Give each TaskGraph its devices; nest data parallelism";
  let description = [{
    With K devices and TaskGraphs asking d1..dn (a TaskGraph without a
    count asks one per copy in a pipeline), each TaskGraph takes its devices
    in order and the model is copied K / (d1 + ... + dn) times (nested data
    parallelism); K must be a multiple of the sum. TaskGraphs without counts
    outside a pipeline all run on every device as one stage; on one device
    everything is one stage. Each TaskGraph gets `stage` and
    `virtual_device` (its devices across the copies); the model gets
    `whale.plan` {devices, stages, replicas, grid}. With the config's
    virtual_stages = v the n TaskGraphs are v chunks on each of n / v
    stages: TaskGraph i gets stage i mod (n / v) and `chunk` i / (n / v),
    and the plan `chunks` = v.
  }];
  let options = [
    Option<"devices", "devices", "int64_t", /*default=*/"1",
           "How many devices the cluster has">,
    Option<"microBatches", "micro-batches", "int64_t", /*default=*/"0",
           "num_micro_batch (0: the config's); above 1 TaskGraphs pipeline">,
  ];
}

def WhalePipeline : WhalePass<"whale-pipeline"> {
  let summary = "Micro-batches and each stage's order of forward and backward";
  let description = [{
    Cuts each replica's share of the global batch into `micro-batches`
    equal micro-batches (rejecting a batch they cannot divide) and gives each
    stage's TaskGraph its `schedule`: `gpipe` (all forwards, then all
    backwards) or `1f1b` (stage s runs p-1-s forwards ahead, then alternates),
    interleaved over the plan's `chunks` when it has them
    (lowering/Transforms/Parallel/PipelineOrder.h; the micro-batches must
    then be a multiple of the stages). With one stage, micro-batches are gradient accumulation.
  }];
  let options = [
    Option<"microBatches", "micro-batches", "int64_t", /*default=*/"0",
           "num_micro_batch (0: the config's, else 1)">,
    Option<"scheduleKind", "schedule", "std::string", /*default=*/"\"\"",
           "gpipe or 1f1b (empty: the config's, else 1f1b)">,
    Option<"globalBatch", "global-batch", "int64_t", /*default=*/"0",
           "The global batch (0: the train block's data batch)">,
  ];
}

def WhaleBalance : WhalePass<"whale-balance"> {
  let summary = "Shares of the batch by device speed, within device memory";
  let description = [{
    Reads the devices from the module's `whale.cluster` (none: all alike,
    unlimited) and prices a step on each (every forward op and the
    backward autodiff builds for it) with its device model, as `whale sim`
    does (perfmodel/StepCost.h, perfmodel/DeviceSpeed.h). In a pipeline, hands each
    copy's stages to its devices in order of memory, the most to stage 0
    (it holds the most micro-batches in flight). Gives each replica a local
    batch proportional to its speed (its slowest stage's time per sample),
    then moves samples off devices over their memory to the device with
    room and the lowest load per unit of speed, the largest amount that
    keeps it within memory (the Whale paper's Algorithm 1), until none is
    over; fails naming the device, the TaskGraph and the bytes when that
    cannot be done. A shard group takes one share; when its devices differ
    in speed its ranks split the group's work unevenly (uneven shards):
    whole-number `shard_weights`, one per position in the group, common to
    all groups so their parameter parts line up, chosen so every split
    dimension stays a whole number of units (runtime/core/Parts.h).
    Records plan `local_batches` (per replica), `micro_batch` (the size the
    model is elaborated at when it is one of the replicas', else replica 0's),
    `shard_weights` and `shard_weight` (this elaboration's rank's) when
    uneven,
    `device_memory` and `device_seconds` (per device, predicted), `shifts`
    ([from replica, to replica, samples] per move) and `balance`. With
    `even` (or config `balance = "even"`) shares stay equal and memory is
    only checked.
  }];
  let options = [
    Option<"even", "even", "bool", /*default=*/"false",
           "Keep equal local batches; only check memory">,
    ListOption<"localBatches", "local-batches", "int64_t",
               "Use these local batches (one per replica) as they are">,
    ListOption<"shardWeights", "shard-weights", "int64_t",
               "With local-batches: the shard groups' weights (uneven "
               "shards)">,
    Option<"shardWeight", "shard-weight", "int64_t", /*default=*/"0",
           "The weight of the rank this elaboration is for (0: the first "
           "rank whose rows it is elaborated at)">,
  ];
}

def WhaleDataParallel : WhalePass<"whale-data-parallel"> {
  let summary = "Plan the gradient all-reduce of replicated parameters";
  let description = [{
    Records `grad_weight` = micro_batch / global_batch, by which each rank
    weights its micro-batch's mean loss so that plain sums over
    micro-batches and replicas give the global batch's gradient (the loss
    must be a mean over the batch), and each stage's `buckets`: its
    parameters in the order backward reaches them, grouped up to
    bucket-bytes per all-reduce.
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"26214400",
           "Gradient bytes per all-reduce bucket">,
  ];
}

def WhaleSharding : WhalePass<"whale-sharding"> {
  let summary = "Tensor parallelism: split TaskGraphs run on parts of values";
  let description = [{
    For each stage with shard groups (plan `shards`, from
    -whale-virtual-devices), rewrites the ops of its split TaskGraphs to
    run on this rank's part of their values: each op takes the sharding
    pattern (matmul: column, row, rows, batch or replicated; elementwise,
    softmax, layernorm, reshape, transpose and reductions follow a split
    dimension; cross entropy over split classes uses a distributed max and
    sum) that moves the fewest bytes forward and backward, and
    `whale.all_gather`, `shard_slice`, `shard_sum` and `fanout` change
    layouts between ops and TaskGraphs (the bridges; a gather followed by a
    partition of the same dimension is never made). Parameters read only
    as parts become sharded parameters. Each TaskGraph records `sharding`
    (every op's pattern, with the costs compared) and `bridges`; the plan
    gets `loss_shards` when the loss is whole over a shard group.
  }];
  let options = [
    Option<"matmul", "matmul", "std::string", /*default=*/"\"auto\"",
           "auto (by cost, or the config's split_matmul), or force column, "
           "row or replicated for every matmul with a weight">,
  ];
}

def WhaleRankPrograms : WhalePass<"whale-rank-programs"> {
  let summary = "One program per stage, with explicit communication";
  let description = [{
    Replaces each planned model `@m` by `@m_stage<s>` for every stage: its
    inputs are one replica's rows of the global batch; it follows the
    stage's schedule with `whale.recv`/`whale.send` between stages, the
    backward of each micro-batch, gradient sums, `whale.all_reduce` over the
    replicas per bucket, clipping over the stages, and the optimizer update.
    It returns its weighted share of the loss. The model must be elaborated
    at its micro-batch.
  }];
}

def WhaleShardOptimizer : WhalePass<"whale-shard-optimizer"> {
  let summary = "ZeRO stage 1: each parameter's update on one owner";
  let description = [{
    Under the config's `shard_optimizer`, gives each parameter whose
    gradient a rank program all-reduces over a group of more than one rank
    an `owner` in that group (dealt out so each member owns about an equal
    share of bytes): the update runs on the owner alone, which alone keeps
    the optimizer's state, and a `whale.broadcast` from the owner follows
    it. Runs on rank programs (functions with `whale.rank`).
  }];
}

def WhaleShardGradients : WhalePass<"whale-shard-gradients"> {
  let summary = "ZeRO stage 2: each micro-batch's gradients reduced to their owners";
  let description = [{
    Under the config's `shard_gradients`, where micro-batches accumulate,
    turns each bucket reduced to owners whose gradients are running sums of
    the micro-batches' into one reduction per micro-batch, placed as soon
    as its gradients are final: the first a reduce to owners, each later
    one a reduce to owners whose sums `whale.add_into_owners` adds into the
    owners' sums (`-whale-overlap-grad-sync` overlaps the reductions like
    any other and moves each addition to where the next starts). Runs on rank
    programs (functions with `whale.rank`), after `-whale-shard-optimizer`.
  }];
}

def WhaleShardParameters : WhalePass<"whale-shard-parameters"> {
  let summary = "ZeRO stage 3: each parameter on its owner, gathered by layer";
  let description = [{
    Under the config's `shard_parameters`, places each parameter that
    `-whale-shard-optimizer` gave an owner on that owner alone (`owner` on
    its `whale.param`), drops the broadcast after the updates, and gathers
    each layer's parameters (`whale.gather_params`) before each run of ops
    that reads them: a layer's forward, its backward (one run where no
    other layer comes between). Runs on rank programs (functions with
    `whale.rank`), after `-whale-shard-optimizer`.
  }];
}

def WhalePrefetchParams : WhalePass<"whale-prefetch-params"> {
  let summary = "Start each stage-3 gather while the layer before computes";
  let description = [{
    Splits each `whale.gather_params` of a rank program (a function with
    `whale.rank`) into `whale.gather_params_start`, placed where the gather
    before it stood, and `whale.gather_params_wait`, where it stood: the
    rank's collective thread gathers the next layer while the rank
    computes this one. Off under grad_sync = "after_backward".
  }];
}

def WhaleOverlapGradSync : WhalePass<"whale-overlap-grad-sync"> {
  let summary = "Start gradient all-reduces during backward, wait at their readers";
  let description = [{
    Splits each `whale.all_reduce` of a rank program (a function with
    `whale.rank`) into `whale.all_reduce_start`, placed right after its
    bucket's gradients are final, and `whale.all_reduce_wait`, placed
    before the first op that reads the sums. The runtime sums the bucket on
    the rank's collective thread meanwhile, so the backward of the earlier
    layers hides it. The running sums of the micro-batches' gradients move
    up to just after their operands, where they are the operands' only
    readers (no value lives longer). Under the config's `grad_sync =
    "after_backward"` it changes nothing.
  }];
}

#endif // WHALE_LOWERING_TRANSFORMS_PARALLEL_PASSES
