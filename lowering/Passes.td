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

def WhaleToRuntime : Pass<"whale-to-runtime", "mlir::ModuleOp"> {
  let summary = "Lower model functions to calls of the runtime's C ABI";
  let description = [{
    Turns every `func.func` marked `whale.model` into an `llvm.func` of the
    same name that runs the model's forward pass on one device by calling
    the runtime (`runtime/WhaleRuntime.h`):

    ```
    i32 @model(ptr %ctx, ptr %inputs, ptr %result)
    ```

    `%inputs` points to the input tensor handles in order; the handle of the
    result is stored to `%result`, and the caller releases it. Each op becomes a `whale_rt_tensor_create`
    for its output (static shapes are known) and one `whale_rt_*` call; every
    status is checked, and the first failure is returned (the message is in
    the context). Parameters are fetched by name with `whale_rt_param`.
    Intermediate tensors are released after their last use (at once when
    nothing reads them). TaskGraphs run
    in place: on one device their strategy does not matter.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

#endif // WHALE_LOWERING_PASSES
