//===- WhaleCommOps.td - what ranks exchange ------------------*- tablegen -*-===//
//
// The explicit communication of a rank program. Peers are named by pipeline
// stage and groups by kind, not by rank number: ranks that play the same
// role run the same program, and the runtime resolves both from where the
// rank sits in the plan's grid of stages x replicas.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_COMM_OPS
#define WHALE_COMM_OPS

def Whale_SendOp : Whale_Op<"send", [MemoryEffects<[MemRead, MemWrite]>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface,
                              ["getBytesWritten", "getOutputMemory"]>]> {
  let summary = "Sends a tensor to this replica's rank at another stage";
  let description = [{
    Hands `value` to the rank of the same replica at pipeline stage `stage`,
    where a `whale.recv` with the same `tag` takes it. Sends are buffered:
    the sender goes on at once.

    ```mlir
    whale.send %h to stage 1 tag 3 : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Whale_AnyTensor:$value,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$stage,
                       I64Attr:$tag);
  let assemblyFormat = [{
    $value `to` `stage` $stage `tag` $tag attr-dict `:` type($value)
  }];
}

def Whale_RecvOp : Whale_Op<"recv", [MemoryEffects<[MemRead, MemWrite]>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getBytesRead"]>]> {
  let summary = "Receives a tensor from this replica's rank at another stage";
  let description = [{
    Waits for the tensor that the rank of the same replica at `stage` sent
    with `tag` (bounded by the communicator's timeout).

    ```mlir
    %h = whale.recv from stage 0 tag 3 : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$stage,
                       I64Attr:$tag);
  let results = (outs Whale_AnyTensor:$result);
  let assemblyFormat = [{
    `from` `stage` $stage `tag` $tag attr-dict `:` type($result)
  }];
}

def Whale_AllReduceOp : Whale_Op<"all_reduce", [MemoryEffects<[MemWrite]>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getOutputMemory"]>]> {
  let summary = "Sums tensors over a group of ranks, in place, as one bucket";
  let description = [{
    Every rank of the group contributes its tensors; each gets the sums.
    `group` is `replicas` (the ranks of this stage: data-parallel gradient
    sync), `stages` (the ranks of this replica) or `shard_peers` (the ranks
    of this stage that hold the same part of split parameters: every
    `shards`-th replica). The operands are reduced as one bucket; the
    results are the summed tensors. The operands keep their values: the
    runtime sums in place, on a `whale.copy` where anything else reads an
    operand (`-whale-copy-written-operands`).

    With `owners` (one position in the group per operand), each sum is
    needed on its owner alone: the rank that updates the parameter when
    the optimizer state is sharded (ZeRO stage 1). The owner's result is
    the sum; another member's is unspecified (its own operand, or the sum),
    and nothing but the owner's update may read it. Each member then sends
    only the parts it does not own: half an all-reduce's bytes.

    `hsdp` (hybrid sharding, the config's `shard_group`) is the sharding
    group around the rank: `shard_group` consecutive replicas (with
    `shards`, the shard peers among them). Owners are positions in it, so
    the ranks at one position of every sharding group own the same sums.
    A reduce to owners over `hsdp` sums over all the replicas (the shard
    peers): to the owners within each sharding group, then each owner's
    sums over the owners at its position in the other groups, so an owner
    gets what it would over the whole group.

    ```mlir
    %a, %b = whale.all_reduce %da, %db over "replicas" : tensor<16x4xf32>, tensor<4xf32> -> tensor<16x4xf32>, tensor<4xf32>
    %c, %d = whale.all_reduce %dc, %dd over "replicas" {owners = array<i64: 1, 0>} : tensor<16x4xf32>, tensor<4xf32> -> tensor<16x4xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Variadic<Whale_FloatTensor>:$values,
                       StrAttr:$group, OptionalAttr<I64Attr>:$shards,
                       OptionalAttr<DenseI64ArrayAttr>:$owners);
  let results = (outs Variadic<Whale_FloatTensor>:$results);
  let assemblyFormat = [{
    $values `over` $group attr-dict `:` type($values) `->` type($results)
  }];
  let hasVerifier = 1;
}

def Whale_BroadcastOp : Whale_Op<"broadcast", [MemoryEffects<[MemRead, MemWrite]>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getOutputMemory"]>]> {
  let summary = "Hands parameters from their owners to the rest of a group";
  let description = [{
    Each of `params` goes, in place, from the rank at its position in
    `owners` of `group` (`replicas`, or `shard_peers` with `shards`) to
    every other member: what follows updates that only the owners take
    (optimizer state sharded over the group). The parameters travel as one
    bucket, each member's together (an all-gather of the owners' parts).

    ```mlir
    whale.broadcast %w, %b from [1, 0] over "replicas" : tensor<16x4xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Variadic<Whale_FloatTensor>:$params,
                       DenseI64ArrayAttr:$owners,
                       StrAttr:$group, OptionalAttr<I64Attr>:$shards);
  let assemblyFormat = [{
    $params `from` $owners `over` $group attr-dict `:` type($params)
  }];
  let hasVerifier = 1;
}

def Whale_GatherParamsOp : Whale_Op<"gather_params", [MemoryEffects<[MemRead, MemAlloc]>,
    DeclareOpInterfaceMethods<InferTypeOpInterface>,
    DeclareOpInterfaceMethods<Whale_CostOpInterface>]> {
  let summary = "Gathers parameters held by one member each into every member";
  let description = [{
    Parameters sharded over a group (ZeRO stage 3): each of `params` lives
    on the member of `group` at its position in `owners`; every member gets
    a new tensor with its values, which its readers use and which is freed
    after the last of them. The parameters travel as one bucket, each
    owner's together (an all-gather of the owners' parts). A unit of the
    model (a layer) is gathered before its forward and again before its
    backward; nothing folds or merges two gathers, as the parameters change
    between steps.

    With `bf16` (a flag per parameter), a marked parameter travels rounded
    to bf16, to nearest with ties to even, half the bytes, and is widened
    exactly where it arrives: only where every reader rounds it so anyway
    (amp's matrix products, a cast to bf16), so its readers compute the
    same bits.

    ```mlir
    %w, %b = whale.gather_params %pw, %pb from [1, 0] over "replicas" : tensor<16x4xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Variadic<Whale_FloatTensor>:$params,
                       DenseI64ArrayAttr:$owners,
                       StrAttr:$group, OptionalAttr<I64Attr>:$shards,
                       OptionalAttr<DenseBoolArrayAttr>:$bf16);
  let results = (outs Variadic<Whale_FloatTensor>:$gathered);
  let assemblyFormat = [{
    $params `from` $owners `over` $group attr-dict `:` type($params)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::ValueRange":$params,
                   "::llvm::ArrayRef<int64_t>":$owners,
                   "::llvm::StringRef":$group, "::mlir::IntegerAttr":$shards), [{
      build($_builder, $_state, params.getTypes(), params,
            $_builder.getDenseI64ArrayAttr(owners),
            $_builder.getStringAttr(group), shards, nullptr);
    }]>];
  let extraClassDeclaration = [{
    /// Bytes of the bucket the group gathers (gatheredBucketBytes).
    int64_t bucketBytes() { return gatheredBucketBytes(getParams(), getBf16()); }
  }];
  let hasVerifier = 1;
}

def Whale_GatherParamsStartOp : Whale_Op<"gather_params_start",
    [MemoryEffects<[MemRead, MemWrite]>,
     DeclareOpInterfaceMethods<Whale_CostOpInterface,
                               ["getBytesWritten", "getOutputMemory"]>]> {
  let summary = "Starts gathering parameters from their owners; the rank goes on";
  let description = [{
    The first half of a `whale.gather_params`, placed a layer ahead of its
    readers: each owner packs its parameters and the rank's collective
    thread gathers the bucket while the rank computes the layer before.
    Its `whale.gather_params_wait` blocks until the bucket is complete and
    yields new tensors with the parameters' values. `owners`, `group`,
    `shards` and `bf16` are those of `whale.gather_params`.

    ```mlir
    %p = whale.gather_params_start %pw, %pb from [1, 0] over "replicas" : tensor<16x4xf32>, tensor<4xf32>
    %w, %b = whale.gather_params_wait %p : tensor<16x4xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Variadic<Whale_FloatTensor>:$params,
                       DenseI64ArrayAttr:$owners,
                       StrAttr:$group, OptionalAttr<I64Attr>:$shards,
                       OptionalAttr<DenseBoolArrayAttr>:$bf16);
  let results = (outs Whale_PendingType:$pending);
  let assemblyFormat = [{
    $params `from` $owners `over` $group attr-dict `:` type($params)
  }];
  let extraClassDeclaration = [{
    /// Bytes of the bucket the group gathers (gatheredBucketBytes).
    int64_t bucketBytes() { return gatheredBucketBytes(getParams(), getBf16()); }
  }];
  let hasVerifier = 1;
}

def Whale_GatherParamsWaitOp : Whale_Op<"gather_params_wait",
    [MemoryEffects<[MemRead, MemWrite, MemAlloc]>,
     DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getBytesRead"]>]> {
  let summary = "Waits for started parameters' gather and yields them";
  let description = [{
    Blocks until the gather `pending` names is complete on this rank
    (bounded by the communicator's timeout) and yields new tensors with
    the parameters' values, in the order `whale.gather_params_start` took
    them; they are freed after their last reader, as a
    `whale.gather_params`'s.
  }];
  let arguments = (ins Whale_PendingType:$pending);
  let results = (outs Variadic<Whale_FloatTensor>:$gathered);
  let assemblyFormat = [{
    $pending attr-dict `:` type($gathered)
  }];
  let extraClassDeclaration = [{
    GatherParamsStartOp getStart() {
      return getPending().getDefiningOp<GatherParamsStartOp>();
    }
  }];
  let hasVerifier = 1;
}

def Whale_AddIntoOwnersOp : Whale_Op<"add_into_owners",
    [MemoryEffects<[MemRead, MemWrite]>, AttrSizedOperandSegments,
     DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getOutputMemory"]>]> {
  let summary = "Adds a micro-batch's gradients, summed on their owners, into the owners' sums";
  let description = [{
    Gradients sharded over a group while micro-batches accumulate (ZeRO
    stage 2, `shard_gradients`): after a `whale.all_reduce` with `owners`
    (or its started pair) has summed a micro-batch's `grads` over `group`,
    each is added, on its owner alone, into the running sum `sums` holds,
    in place; the results are those sums. On the other members a result
    has no values: nothing but the owner's update (or the next
    micro-batch's addition) reads it. Each rank's `grads` are freed.
    Split from the reduction so that the reduction overlaps the backward
    like any other (`-whale-overlap-grad-sync`).

    ```mlir
    %r:2 = whale.all_reduce %g2a, %g2b over "replicas" {owners = array<i64: 1, 0>} : tensor<16x4xf32>, tensor<4xf32>
    %s2:2 = whale.add_into_owners %r#0, %r#1 into %s1#0, %s1#1 to [1, 0] over "replicas" : tensor<16x4xf32>, tensor<4xf32> into tensor<16x4xf32>, tensor<4xf32> -> tensor<16x4xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Variadic<Whale_FloatTensor>:$grads,
                       Variadic<Whale_FloatTensor>:$sums,
                       DenseI64ArrayAttr:$owners,
                       StrAttr:$group, OptionalAttr<I64Attr>:$shards);
  let results = (outs Variadic<Whale_FloatTensor>:$results);
  let assemblyFormat = [{
    $grads `into` $sums `to` $owners `over` $group attr-dict `:` type($grads)
    `into` type($sums) `->` type($results)
  }];
  let hasVerifier = 1;
}

def Whale_AllReduceStartOp : Whale_Op<"all_reduce_start",
    [MemoryEffects<[MemRead, MemWrite]>,
     DeclareOpInterfaceMethods<Whale_CostOpInterface,
                               ["getBytesWritten", "getOutputMemory"]>]> {
  let summary = "Starts summing a bucket over a group; the rank goes on";
  let description = [{
    The first half of a `whale.all_reduce`: the rank hands its tensors to
    the collective and goes on computing while the group sums them. Its
    `whale.all_reduce_wait` ends the collective and yields the sums. Groups
    and `shards` are those of `whale.all_reduce`. The tensors are summed in
    place, on copies where anything else reads them, as for
    `whale.all_reduce`. Every member starts the
    collectives over a group in the same order: ranks of one role run the
    same program. `owners` makes it a reduce to owners, as for
    `whale.all_reduce`.

    ```mlir
    %p = whale.all_reduce_start %da, %db over "replicas" : tensor<16x4xf32>, tensor<4xf32>
    %a, %b = whale.all_reduce_wait %p : tensor<16x4xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Variadic<Whale_FloatTensor>:$values,
                       StrAttr:$group, OptionalAttr<I64Attr>:$shards,
                       OptionalAttr<DenseI64ArrayAttr>:$owners);
  let results = (outs Whale_PendingType:$pending);
  let assemblyFormat = [{
    $values `over` $group attr-dict `:` type($values)
  }];
  let hasVerifier = 1;
}

def Whale_AllReduceWaitOp : Whale_Op<"all_reduce_wait",
    [MemoryEffects<[MemRead, MemWrite]>,
     DeclareOpInterfaceMethods<Whale_CostOpInterface,
                               ["getBytesRead", "getOutputMemory"]>]> {
  let summary = "Waits for a started all-reduce and yields its sums";
  let description = [{
    Blocks until the collective `pending` names has finished on this rank
    (bounded by the communicator's timeout) and yields the summed tensors:
    the buffers `whale.all_reduce_start` was given, in its order.
  }];
  let arguments = (ins Whale_PendingType:$pending);
  let results = (outs Variadic<Whale_FloatTensor>:$results);
  let assemblyFormat = [{
    $pending attr-dict `:` type($results)
  }];
  let extraClassDeclaration = [{
    AllReduceStartOp getStart() {
      return getPending().getDefiningOp<AllReduceStartOp>();
    }
  }];
  let hasVerifier = 1;
}

#endif // WHALE_COMM_OPS
