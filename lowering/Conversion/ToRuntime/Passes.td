//===- Passes.td - the whale dialect to runtime calls ----*- tablegen -*-===//
//
// Part of lowering/Passes.td, which defines WhalePass and includes every
// folder's part.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_CONVERSION_TORUNTIME_PASSES
#define WHALE_LOWERING_CONVERSION_TORUNTIME_PASSES

def WhaleCopyWrittenOperands : WhalePass<"whale-copy-written-operands"> {
  let summary = "Give each op the runtime runs in place operands of its own";
  let description = [{
    `whale.all_reduce`, `whale.all_reduce_start` and `whale.clip_grad_norm`
    leave their operands' values as they were (tensors are values), but the
    runtime writes their results into their operands' tensors. Where
    something else reads an operand after the op (through a TaskGraph's
    results too, or an op of another dialect, such as a step's call before
    the steps are inlined), the op names it twice, or it is a parameter, a
    function argument or a returned value, the op gets a `whale.copy` of it
    instead:

    ```mlir
    %g = whale.cast %h : tensor<4xbf16> to tensor<4xf32>
    %c = whale.copy %g : tensor<4xf32>
    %s = whale.all_reduce %c over "replicas" : tensor<4xf32> -> tensor<4xf32>
    %u = whale.mul %g, %s : ...
    ```

    `-whale-to-runtime` does the same first (after inlining the steps), so
    the pipelines are free to run `-cse` and `-canonicalize`, which merge
    equal values whatever writes them later.
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

#endif // WHALE_LOWERING_CONVERSION_TORUNTIME_PASSES
