//===- Passes.td - gradients and the train step ----------*- tablegen -*-===//
//
// Part of lowering/Passes.td, which defines WhalePass and includes every
// folder's part.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_TRANSFORMS_AUTODIFF_PASSES
#define WHALE_LOWERING_TRANSFORMS_AUTODIFF_PASSES

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

#endif // WHALE_LOWERING_TRANSFORMS_AUTODIFF_PASSES
