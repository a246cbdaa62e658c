//===- Passes.td - passes over the whale dialect ---------------*- tablegen -*-===//

#ifndef WHALE_LOWERING_PASSES
#define WHALE_LOWERING_PASSES

include "mlir/Pass/PassBase.td"

// Every pass may make whale attributes (#whale.settings, the plan's
// entries) and ops, on a module with none yet (`module {}`): it loads the
// dialect first.
class WhalePass<string name> : Pass<name, "mlir::ModuleOp"> {
  let dependentDialects = ["whale::WhaleDialect"];
}

def WhaleFuseAttention : WhalePass<"whale-fuse-attention"> {
  let summary = "Fuse the attention pattern into one whale.attention";
  let description = [{
    Finds `matmul(softmax(mask(matmul(q, k^T) * scale)), v)` (the mask a
    causal_mask or none, the scale a constant factor or divisor or none)
    over `[..., T, E]` operands, each step read by the next only, and
    replaces it by `whale.attention q, k, v`: one op whose kernel never
    holds the `[..., T, T]` scores, and whose gradient is one
    `whale.attention_grad`. Runs before autodiff and planning, so every
    plan and the cost model see the fused op.

    Then, where q, k and v are each `transpose` swapping T and H of
    `[..., T, H, E]` read only by the attention, and its output is read
    only by the same swap back (GPT's split and merge of heads), the
    permutes go and the attention is `sequence_major` over the unpermuted
    operands: no transpose runs around it, forward or backward.
  }];
}

def WhaleAmpStorage : WhalePass<"whale-amp-storage"> {
  let summary = "Store a model's activations in bf16 (amp), parameters in fp32";
  let description = [{
    Every op of a model function computes in bf16: its float operands are
    converted with `whale.cast` (a parameter or an input once per block
    that reads it, before its first reader), its float results become
    bf16. The loss, softmax, reductions, batch normalization and top-k
    compute in fp32, as autocast keeps them; parameters stay fp32 masters;
    a taskgraph's yield and the function's return hand back the types
    they declare. Runs before autodiff: the gradient of a cast is the cast
    back, so activation gradients are bf16 and parameter gradients fp32.

    The train pipeline runs it under `amp-storage` (`whale run
    --bf16-activations`), with `-whale-widen-bf16` after the train step
    (docs/gpu.md, "bf16 storage").
  }];
}

def WhaleWidenBf16 : WhalePass<"whale-widen-bf16"> {
  let summary = "Run in fp32, between casts, each op the runtime has no bf16 kernel for";
  let description = [{
    Every whale op with a bf16 operand or result, other than those that
    move or fill elements whatever they are (cast, reshape, constant),
    computes in fp32: its bf16 operands are widened by `whale.cast` (once
    per block, before the first reader), its results are fp32 and rounded
    back to bf16 for their readers. First, cross entropy and its gradient
    take the bf16 logits amp's storage widened for them, as stored (their
    kernels widen each logit as they load it; the loss and gradients stay
    fp32). That is what a native bf16 kernel
    does, fp32 inside and rounded at the store, so the numbers hold and
    the simulator prices the conversions that run. Runs after the train
    step is built, before fusion.

    Then it chooses where a value is stored. A value rounded only for
    readers that widen it again stays fp32 (one rounding and two
    conversions fewer). A bf16 matmul's result that every reader widens
    is stored in fp32 too, unless it is a forward product, `fused-casts`
    says fusion follows and every widened copy is read in elementwise
    kernels: then it stays bf16 and the kernels widen it as they load it,
    half the bytes.
  }];
  let options = [
    Option<"fusedCasts", "fused-casts", "bool", /*default=*/"false",
           "-whale-fuse-elementwise follows, and takes casts into its kernels">,
  ];
}

def WhaleGemmEpilogues : WhalePass<"whale-gemm-epilogues"> {
  let summary = "Fold linear layers' bias and GELU, and their gradients, into GEMM epilogues";
  let description = [{
    A matmul (left side not transposed, a weight matrix on the right, f32)
    whose only reader adds a bias of one value a column becomes a
    `whale.linear`; when a GELU reads the sum, the GELU joins it too, and
    the sum stays as the op's `preactivation` only where something else
    (the GELU's gradient) reads it. A GPU runs the op as one cuBLASLt
    GEMM with the bias and GELU applied in its epilogue. The gradient of
    the sum reads the product's shape only; it reads the fused result in
    its place. In the backward, a weight's gradient (a matrix shared by
    the rows) and a bias gradient that sum the same output gradient become
    one `whale.linear_weight_grad` (the bias summed in the GEMM's
    epilogue), and an input's gradient whose only reader is a GELU's
    gradient becomes one `whale.gelu_matmul_grad` (the derivative applied
    in the epilogue). A layernorm's input gradient whose only reader adds
    it to another gradient of its type takes that gradient as its `plus`
    operand: one pass over the rows adds it. Runs on programs about to be
    lowered, before -whale-fuse-elementwise; plans on GPUs run it.
  }];
}

def WhaleFuseRoundedSums : WhalePass<"whale-fuse-rounded-sums"> {
  let summary = "Round an activation gradient and sum its bias's gradient in one pass";
  let description = [{
    Under amp's storage (after -whale-widen-bf16 and -whale-gemm-epilogues)
    an fp32 activation gradient is often read by a `whale.cast` to bf16
    (for the GEMMs) and by a bias's gradient (`whale.binary_grad add` whose
    result is the gradient summed over its leading dimensions), in one
    block. The two become one `whale.round_and_sum`, standing where the
    earlier stood: one kernel reads the gradient once. Its sum is the bias
    gradient's, in the same order, so plans with and without it train
    alike. Where the gradient is a `whale.cross_entropy_grad` that only
    the new op reads (the logits'), the two become one
    `whale.rounded_cross_entropy_grad`, standing where the loss's gradient
    stood: the f32 gradient is never stored. Plans on GPUs under amp's
    storage run it.
  }];
}

def WhaleShareCasts : WhalePass<"whale-share-casts"> {
  let summary = "Convert a value once where a block converts it again, unwritten";
  let description = [{
    A `whale.cast` of a value to a type that an earlier cast in the same
    block already made, with no op between them that may write the value
    or the earlier cast's result, or a view of either (an op not free of
    memory effects that reads it: an optimizer's in-place update,
    clipping, an in-place collective), reads the earlier cast's result and
    is erased: the conversion gives the same bits. Under amp's
    storage a rank program repeats each micro-batch's forward and backward
    in one block, each converting the weights again; after this pass each
    weight is converted once a step. Runs after -whale-widen-bf16.
  }];
}

def WhaleFuseElementwise : WhalePass<"whale-fuse-elementwise"> {
  let summary = "Group chains of elementwise ops into whale.fused regions";
  let description = [{
    Groups elementwise f32 ops (add, sub, mul, div, the unary functions,
    their gradients, and binary gradients that sum nothing) that iterate
    over one shape and feed one another into `whale.fused` regions, which
    the lowering turns into one generated loop each: values used only
    inside a region are never written to memory. An op joins its operand's
    group when no op outside the group that comes before it reads the
    group's values, so the region can stand where its last op stood, and
    no op that makes a value stands between the group and it, so no value
    lives longer than it did.
    First, the gradient of a sum's operand (or a difference's left one)
    that has the output's shape is replaced by the output's gradient: it
    is that value, and no kernel need copy it.
    Runs on programs about to be lowered (a rank program, the one-device
    train step), after every other pass.
    With `element-programs`, for GPUs, every region is one that an element
    program runs (runtime/ops/ElementProgram.h): its sums all sum over the same
    dimensions, and it has few enough operands for a GPU thread; a region
    whose program still cannot be written is put back as the ops it holds.
  }];
  let options = [
    Option<"elementPrograms", "element-programs", "bool", /*default=*/"false",
           "Only regions that an element program runs (GPU devices)">,
  ];
}

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

def WhaleAutodiff : WhalePass<"whale-autodiff"> {
  let summary = "Reverse-mode differentiation of each model";
  let description = [{
    For every model function `@m` that returns a scalar floating-point loss,
    adds `@m_grad` with the same inputs, returning the loss and the gradient
    of every parameter (in order of first appearance; their names are in
    the function's `whale.gradients` attribute). Each op's backward comes
    from its GradientOpInterface, in reverse program order; gradients of a
    value used several times are added. A parameter the loss does not
    depend on gets a zero gradient.

    The gradient function is flat: the TaskGraphs of the forward pass are
    inlined, as on one device their strategy does not matter. Placing
    backward ops into TaskGraphs is the planner's work.
  }];
}

def WhaleTrainStep : WhalePass<"whale-train-step"> {
  let summary = "One training step per model: forward, backward, update";
  let description = [{
    For every model `@m` with a `whale.train` block whose gradient function
    `@m_grad` exists (run -whale-autodiff first), adds `@m_train` with the
    same inputs, returning the loss. It computes the gradients as `@m_grad`
    does, clips them by their global norm when the train block sets
    `clip_grad_norm`, and updates every parameter with the train block's
    optimizer (`sgd`, `adam`, `adamw`). The step number and the learning-rate
    schedule's factor are the runtime context's, set by the driver before
    each step.
  }];
}

def WhaleToRuntime : WhalePass<"whale-to-runtime"> {
  let summary = "Lower model functions to calls of the runtime's C ABI";
  let description = [{
    Turns every `func.func` marked `whale.model` or `whale.rank` into an `llvm.func` of the
    same name that runs the model's forward pass on one device by calling
    the runtime (`runtime/WhaleRuntime.h`):

    ```
    i32 @model(ptr %ctx, ptr %inputs, ptr %result)
    ```

    `%inputs` points to the input tensor handles in order; the handles of
    the results are stored to `%result[0..n)`, and the caller releases them. Each op becomes a `whale_rt_tensor_create`
    for its output (static shapes are known) and one `whale_rt_*` call; every
    status is checked, and the first failure is returned (the message is in
    the context). Parameters are fetched by name with `whale_rt_param`.
    Intermediate tensors are released after their last use (at once when
    nothing reads them). TaskGraphs run
    in place: on one device their strategy does not matter.

    Each op has a conversion pattern of its own
    (`lowering/Conversion/ToRuntime/*Patterns.cpp`); an op that none
    converts fails the pass ("failed to legalize operation").

    With `sites`, each op of a function's body is preceded by
    `whale_rt_set_site(ctx, i)`, i its position in the body, so a trace of
    the run names every op's time by its place (what `whale profile` reads).
  }];
  let options = [
    Option<"sites", "sites", "bool", /*default=*/"false",
           "Mark each op with its position for traces (whale_rt_set_site)">,
  ];
  let dependentDialects = ["whale::WhaleDialect",
                           "mlir::LLVM::LLVMDialect", "mlir::func::FuncDialect",
                           "mlir::linalg::LinalgDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::math::MathDialect", "mlir::scf::SCFDialect"];
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
    (lowering/PipelineOrder.h; the micro-batches must then be a multiple of
    the stages). With one stage, micro-batches are gradient accumulation.
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

#endif // WHALE_LOWERING_PASSES
