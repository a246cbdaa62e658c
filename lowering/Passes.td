//===- Passes.td - passes over the whale dialect ---------------*- tablegen -*-===//

#ifndef WHALE_LOWERING_PASSES
#define WHALE_LOWERING_PASSES

include "mlir/Pass/PassBase.td"

def WhaleAnnotateCost : Pass<"whale-annotate-cost", "mlir::ModuleOp"> {
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

#endif // WHALE_LOWERING_PASSES
