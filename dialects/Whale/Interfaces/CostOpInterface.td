//===- CostOpInterface.td - FLOPs, bytes and memory of an op ---*- tablegen -*-===//
//
// The one cost model of Whale. The planner, the load balancer and the simulator
// all ask an op for its cost through this interface; nothing else estimates
// FLOPs or bytes. Every number comes from static shapes only.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_COST_OP_INTERFACE
#define WHALE_COST_OP_INTERFACE

include "mlir/IR/OpBase.td"

def Whale_CostOpInterface : OpInterface<"CostOpInterface"> {
  let description = [{
    Cost of one execution of an op, computed from the static shapes of its
    operands and results:

    - `getFlops`: floating-point operations (a multiply-add counts 2);
    - `getBytesRead`: bytes of operands the op reads;
    - `getBytesWritten`: bytes of results the op writes;
    - `getOutputMemory`: bytes the op's results keep alive (0 for views);
    - `getCommBytes`: bytes this rank hands to a collective of its shard
      group (what the runtime's counters count), 0 for local ops.

    The defaults treat the op as reading every operand and writing every
    result once with no arithmetic; ops override what differs.
  }];
  let cppNamespace = "::whale";

  let methods = [
    InterfaceMethod<"Floating-point operations of one execution.",
      "int64_t", "getFlops", (ins), "",
      [{ return 0; }]>,
    InterfaceMethod<"Bytes of operands read.",
      "int64_t", "getBytesRead", (ins), "",
      [{ return ::whale::operandBytes($_op); }]>,
    InterfaceMethod<"Bytes of results written.",
      "int64_t", "getBytesWritten", (ins), "",
      [{ return ::whale::resultBytes($_op); }]>,
    InterfaceMethod<"Bytes the results hold in memory.",
      "int64_t", "getOutputMemory", (ins), "",
      [{ return ::whale::resultBytes($_op); }]>,
    InterfaceMethod<"Bytes this rank contributes to collectives.",
      "int64_t", "getCommBytes", (ins), "",
      [{ return 0; }]>,
  ];
}

#endif // WHALE_COST_OP_INTERFACE
