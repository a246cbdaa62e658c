//===- WhaleOptimizerOps.td - the update half of a train step --*- tablegen -*-===//

#ifndef WHALE_OPTIMIZER_OPS
#define WHALE_OPTIMIZER_OPS

def Whale_SgdUpdateOp : Whale_Op<"sgd_update", [MemoryEffects<[MemWrite]>,
    AllTypesMatch<["param", "grad"]>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface,
        ["getFlops", "getBytesRead", "getBytesWritten", "getOutputMemory"]>]> {
  let summary = "One SGD step of a parameter";
  let description = [{
    `param -= lr * (v = momentum * v + grad + weight_decay * param)`, in
    place. The velocity lives with the parameter; the learning rate is
    scaled by the schedule for the current step (set by the driver).

    With `owner` (optimizer state sharded over a group, ZeRO stage 1), only
    the rank at position `owner` of `group` (`replicas`, or `shard_peers`
    with `shards`) takes the step and keeps the velocity; a
    `whale.broadcast` hands the others the new parameter.

    ```mlir
    whale.sgd_update %w, %dw {lr = 1.000000e-01 : f64, momentum = 9.000000e-01 : f64, weight_decay = 0.000000e+00 : f64} : tensor<16x4xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$param, Whale_FloatTensor:$grad,
                       F64Attr:$lr, F64Attr:$momentum, F64Attr:$weight_decay,
                       OptionalAttr<I64Attr>:$owner,
                       OptionalAttr<StrAttr>:$group,
                       OptionalAttr<I64Attr>:$shards);
  let assemblyFormat = "$param `,` $grad attr-dict `:` type($param)";
  let hasVerifier = 1;
}

def Whale_AdamUpdateOp : Whale_Op<"adam_update", [MemoryEffects<[MemWrite]>,
    AllTypesMatch<["param", "grad"]>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface,
        ["getFlops", "getBytesRead", "getBytesWritten", "getOutputMemory"]>]> {
  let summary = "One Adam (or AdamW) step of a parameter";
  let description = [{
    Adam with bias correction for the current step; with `decoupled`, AdamW
    (weight decay applied to the parameter rather than added to the
    gradient). The two moments live with the parameter; with `owner`, on
    that rank of `group` alone, as for `whale.sgd_update`.

    ```mlir
    whale.adam_update %w, %dw {lr = 1.000000e-03 : f64, beta1 = 9.000000e-01 : f64, beta2 = 9.990000e-01 : f64, eps = 1.000000e-08 : f64, weight_decay = 0.000000e+00 : f64} : tensor<16x4xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$param, Whale_FloatTensor:$grad,
                       F64Attr:$lr, F64Attr:$beta1, F64Attr:$beta2, F64Attr:$eps,
                       F64Attr:$weight_decay, UnitAttr:$decoupled,
                       OptionalAttr<I64Attr>:$owner,
                       OptionalAttr<StrAttr>:$group,
                       OptionalAttr<I64Attr>:$shards);
  let assemblyFormat = "$param `,` $grad attr-dict `:` type($param)";
  let hasVerifier = 1;
}

def Whale_ClipGradNormOp : Whale_Op<"clip_grad_norm", [MemoryEffects<[MemWrite]>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface,
        ["getFlops", "getBytesWritten", "getOutputMemory"]>]> {
  let summary = "Scales gradients to a global L2 norm of at most max_norm";
  let description = [{
    All operands are scaled together, in place, when their global L2 norm
    exceeds `max_norm`; the results are the scaled gradients. The runtime
    scales in place, on a `whale.copy` where anything else reads an operand
    (`-whale-copy-written-operands`). With `group` (`stages`), the
    norm is taken over the gradients of every rank of the group: a pipeline's
    stages each hold a part of the model. Under tensor parallelism,
    `shards` and `sharded` mark the gradients that are this rank's part of
    a parameter split over a shard group of `shards` ranks: their squares
    are summed over the group, the others' counted once. With `owners`
    (one per gradient: a position among the replicas, among the shard
    peers for a `sharded` part, or -1), a gradient with an owner was
    reduced to that rank alone (`whale.all_reduce` with `owners`): its
    squares count on its owner, summed over the replicas; a gradient of -1
    counts as it would without owners.

    ```mlir
    %a, %b = whale.clip_grad_norm %da, %db max_norm = 1.000000e+00 : tensor<16x4xf32>, tensor<4xf32> -> tensor<16x4xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Variadic<Whale_FloatTensor>:$grads, F64Attr:$max_norm,
                       OptionalAttr<StrAttr>:$group,
                       OptionalAttr<I64Attr>:$shards,
                       OptionalAttr<DenseBoolArrayAttr>:$sharded,
                       OptionalAttr<DenseI64ArrayAttr>:$owners);
  let results = (outs Variadic<Whale_FloatTensor>:$results);
  let assemblyFormat = [{
    $grads `max_norm` `=` $max_norm (`over` $group^)? attr-dict `:`
    type($grads) `->`
    type($results)
  }];
  let hasVerifier = 1;
}

#endif // WHALE_OPTIMIZER_OPS
