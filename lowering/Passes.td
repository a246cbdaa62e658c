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

def WhaleAutodiff : Pass<"whale-autodiff", "mlir::ModuleOp"> {
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

def WhaleTrainStep : Pass<"whale-train-step", "mlir::ModuleOp"> {
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

def WhaleToRuntime : Pass<"whale-to-runtime", "mlir::ModuleOp"> {
  let summary = "Lower model functions to calls of the runtime's C ABI";
  let description = [{
    Turns every `func.func` marked `whale.model` into an `llvm.func` of the
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
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

#endif // WHALE_LOWERING_PASSES
