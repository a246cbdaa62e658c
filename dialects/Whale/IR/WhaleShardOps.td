//===- WhaleShardOps.td - tensor parallelism inside a TaskGraph -*- tablegen -*-===//
//
// The ops -whale-sharding inserts where a split TaskGraph's values change
// how they are laid out over its shard group: the `shards` consecutive
// ranks of a stage (replicas r .. r + shards - 1 with r a multiple of
// shards). Every op acts on this rank's part and knows its position in the
// group from the runtime, so the ranks of a group share one program.
//
// The gradient convention: a value every rank of the group holds whole has
// the same, whole gradient on every rank; a part of a value has the
// gradient of that part. Each op's gradient keeps the convention:
//
//   all_gather  (part -> whole)      gradient: this rank's part
//   shard_slice (whole -> part)      gradient: all_gather
//   shard_sum   (partial -> whole)   gradient: passed through
//   fanout      (whole read by ops   gradient: shard_sum (the readers'
//                that run on parts)   gradients are partial)
//   all_to_all  (part(a) -> part(b)) gradient: all_to_all (part(b) ->
//                                     part(a)), parts equal or weighted
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_SHARD_OPS
#define WHALE_SHARD_OPS

class Whale_ShardOp<string mnemonic, list<Trait> traits = []>
    : Whale_Op<mnemonic, !listconcat(traits, [
        DeclareOpInterfaceMethods<Whale_GradientOpInterface>,
        DeclareOpInterfaceMethods<Whale_CostOpInterface,
                                  ["getCommBytes"]>])>;

def Whale_AllGatherOp : Whale_ShardOp<"all_gather", [Pure]> {
  let summary = "Joins the parts of a value held by a shard group";
  let description = [{
    Each of the `shards` ranks holds one part of `axis`; every rank gets the
    whole, parts in group order. Parts are equal, or with `weights` (uneven
    shards) the axis is cut in sum(weights) units and part `i` holds
    `weights[i]` of them; this rank's part is one of those.

    ```mlir
    %x = whale.all_gather %p axis 0 shards 4 : tensor<2x16xf32> -> tensor<8x16xf32>
    %y = whale.all_gather %q axis 1 shards 2 {weights = array<i64: 3, 1>} : tensor<8x12xf32> -> tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Whale_AnyTensor:$value, I64Attr:$axis,
                       ConfinedAttr<I64Attr, [IntMinValue<2>]>:$shards,
                       OptionalAttr<DenseI64ArrayAttr>:$weights);
  let results = (outs Whale_AnyTensor:$result);
  let assemblyFormat = [{
    $value `axis` $axis `shards` $shards attr-dict `:` type($value) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Whale_AllToAllOp : Whale_ShardOp<"all_to_all", [Pure]> {
  let summary = "Moves the parts of a shard group's value to another axis";
  let description = [{
    Each of the `shards` ranks holds its part along `concat_axis`; each gets
    its part along `split_axis` instead: rank j's chunk j (along
    `split_axis`) of every rank's part, joined along `concat_axis` in group
    order. Parts are equal, or with `weights` cut as all_gather's are (this
    rank's parts along both axes are its share). A mixture of experts'
    slots go from the groups of tokens each rank routed to the experts each
    rank keeps, and back.

    ```mlir
    %e = whale.all_to_all %s split 0 concat 1 shards 2 : tensor<4x10x8xf32> -> tensor<2x20x8xf32>
    %u = whale.all_to_all %s split 0 concat 1 shards 2 {weights = array<i64: 3, 1>} : tensor<4x6x8xf32> -> tensor<3x8x8xf32>
    ```
  }];
  let arguments = (ins Whale_AnyTensor:$value, I64Attr:$split_axis,
                       I64Attr:$concat_axis,
                       ConfinedAttr<I64Attr, [IntMinValue<2>]>:$shards,
                       OptionalAttr<DenseI64ArrayAttr>:$weights);
  let results = (outs Whale_AnyTensor:$result);
  let assemblyFormat = [{
    $value `split` $split_axis `concat` $concat_axis `shards` $shards attr-dict
    `:` type($value) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Whale_ShardSliceOp : Whale_ShardOp<"shard_slice", [Pure]> {
  let summary = "This rank's part of a value the shard group holds whole";
  let description = [{
    Part `i` of `shards` parts along `axis` (equal, or as `weights` cut
    them: see all_gather), where `i` is this rank's position in its shard
    group. No data moves.

    With `parts` (fewer than `shards`, dividing it): part `i * parts /
    shards` of `parts` equal parts, each held by `shards / parts`
    consecutive ranks. Grouped-query attention split over more ranks than
    it has key heads reads its keys so: each rank the key heads its query
    heads read. Its gradient gathers every rank's part and adds those of
    each part's holders.

    ```mlir
    %p = whale.shard_slice %x axis 1 shards 4 : tensor<8x16xf32> -> tensor<8x4xf32>
    %k = whale.shard_slice %kv axis 1 shards 4 parts 2 : tensor<2x2x16x8xf32> -> tensor<2x1x16x8xf32>
    ```
  }];
  let arguments = (ins Whale_AnyTensor:$value, I64Attr:$axis,
                       ConfinedAttr<I64Attr, [IntMinValue<2>]>:$shards,
                       OptionalAttr<DenseI64ArrayAttr>:$weights,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>>:$parts);
  let results = (outs Whale_AnyTensor:$result);
  let assemblyFormat = [{
    $value `axis` $axis `shards` $shards (`parts` $parts^)? attr-dict `:` type($value) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Whale_ShardSumOp : Whale_ShardOp<"shard_sum", [Pure, SameOperandsAndResultType]> {
  let summary = "Adds the partial sums a shard group holds";
  let description = [{
    Every rank of the group holds a partial sum (a row-split matrix product,
    a reduction over a split axis); each gets the total, added in group
    order so every rank has the same bits.

    ```mlir
    %y = whale.shard_sum %partial shards 4 : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$value,
                       ConfinedAttr<I64Attr, [IntMinValue<2>]>:$shards);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = "$value `shards` $shards attr-dict `:` type($value)";
}

def Whale_FanoutOp : Whale_ShardOp<"fanout", [Pure, SameOperandsAndResultType]> {
  let summary = "A whole value read by ops that each compute one part";
  let description = [{
    The value itself. Its readers (a column-split matrix product, an
    elementwise op on a split value) each see only their part of the
    result, so their gradients of it are partial: the backward adds them
    over the shard group.

    ```mlir
    %x1 = whale.fanout %x shards 4 : tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$value,
                       ConfinedAttr<I64Attr, [IntMinValue<2>]>:$shards);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = "$value `shards` $shards attr-dict `:` type($value)";
}

def Whale_ShardedCrossEntropyOp
    : Whale_ShardOp<"sharded_cross_entropy", [Pure]> {
  let summary = "Softmax cross entropy over classes split across a shard group";
  let description = [{
    `logits` is this rank's `[..., C / shards]` part of the classes (part
    `i` holds classes `[i * C / shards, (i + 1) * C / shards)`, or its
    share of them as `weights` cut them: see all_gather); `labels` are
    whole. The loss of each sample comes from a distributed maximum and
    sum over the group, so the logits are never gathered.

    ```mlir
    %l = whale.sharded_cross_entropy %logits, %y shards 4 : tensor<8x25xf32>, tensor<8xi32> -> tensor<8xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$logits, Whale_IndexTensor:$labels,
                       ConfinedAttr<I64Attr, [IntMinValue<2>]>:$shards,
                       OptionalAttr<DenseI64ArrayAttr>:$weights);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `shards` $shards attr-dict `:` type($logits) `,` type($labels) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Whale_ShardedCrossEntropyGradOp
    : Whale_Op<"sharded_cross_entropy_grad", [Pure, AllTypesMatch<["logits", "result"]>,
        DeclareOpInterfaceMethods<Whale_CostOpInterface, ["getCommBytes"]>]> {
  let summary = "Gradient of the sharded cross entropy, for this rank's classes";
  let description = [{
    `(softmax(logits) - onehot(labels)) * dloss` restricted to this rank's
    classes, with the softmax's normalizer summed over the group.

    ```mlir
    %dl = whale.sharded_cross_entropy_grad %logits, %y, %dloss shards 4 : tensor<8x25xf32>, tensor<8xi32>, tensor<8xf32>
    ```
  }];
  let arguments = (ins Whale_FloatTensor:$logits, Whale_IndexTensor:$labels,
                       Whale_FloatTensor:$dloss,
                       ConfinedAttr<I64Attr, [IntMinValue<2>]>:$shards,
                       OptionalAttr<DenseI64ArrayAttr>:$weights);
  let results = (outs Whale_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $dloss `shards` $shards attr-dict `:` type($logits) `,` type($labels)
    `,` type($dloss)
  }];
}

#endif // WHALE_SHARD_OPS
