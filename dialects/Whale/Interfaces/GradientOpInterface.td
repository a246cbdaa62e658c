//===- GradientOpInterface.td - how an op differentiates ------*- tablegen -*-===//

#ifndef WHALE_GRADIENT_OP_INTERFACE
#define WHALE_GRADIENT_OP_INTERFACE

include "mlir/IR/OpBase.td"

def Whale_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let description = [{
    Reverse-mode differentiation of one op: given the gradient of each of
    its results (a null Value where a result has none), emit whale ops at
    the builder's insertion point that compute the gradient of each operand,
    and return them (a null Value for an operand with no gradient, such as
    integer ids). Used by -whale-autodiff.
  }];
  let cppNamespace = "::whale";
  let methods = [
    InterfaceMethod<"Emits the gradients of the operands.",
      "::llvm::SmallVector<::mlir::Value>", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ArrayRef<::mlir::Value>":$resultGradients)>,
  ];
}

#endif // WHALE_GRADIENT_OP_INTERFACE
