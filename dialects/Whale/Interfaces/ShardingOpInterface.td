//===- ShardingOpInterface.td - an op over a shard group -*- tablegen -*-===//
//
// Tensor parallelism's rules, one per op, as MLIR's `shard` dialect keeps
// them (its ShardingInterface): what layouts over a shard group an op can
// take its operands in, and what its result then is. -whale-sharding asks
// every op of a split TaskGraph for its patterns and takes the one that
// moves the fewest bytes; it knows no op by name. An op without the
// interface runs whole on every rank of the group.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_SHARDING_OP_INTERFACE
#define WHALE_SHARDING_OP_INTERFACE

include "mlir/IR/OpBase.td"

def Whale_ShardingOpInterface : OpInterface<"ShardingOpInterface"> {
  let description = [{
    The sharding patterns of an op: each names the layout (whole, part(d),
    partial, or for an operand shared(d, P), `ShardingOpInterface.h`) it
    needs of each operand, which
    whole operands its parts read (their gradients are summed over the
    group), and the layout of its result. The op offers the patterns that
    its operands' present layouts make worth trying (`Context::layoutOf`);
    the pass drops those whose layouts do not divide the values and prices
    the rest.
  }];
  let cppNamespace = "::whale";

  let methods = [
    InterfaceMethod<"Adds the op's sharding patterns to `ctx`.",
      "void", "getShardingPatterns", (ins "::whale::sharding::Context &":$ctx)>,
    InterfaceMethod<[{
        Why the op cannot run split when it offers no pattern that fits
        ("" for the pass's general message).
      }],
      "std::string", "getShardingRefusal", (ins), "",
      [{ return ""; }]>,
  ];
}

#endif // WHALE_SHARDING_OP_INTERFACE
