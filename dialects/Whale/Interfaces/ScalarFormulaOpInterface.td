//===- ScalarFormulaOpInterface.td - an op's value per element -*- tablegen -*-===//
//
// An elementwise op defined by a formula: its element from its operand's
// element, and its gradient's element, over the arithmetic every kernel
// Whale generates provides (ScalarBuilder). The fused kernels on the CPU,
// the element programs on a GPU, the lowering of the op alone (a region of
// its own) and its gradient (whale.formula_grad) all compute from these
// two formulas, so a new elementwise op is its ODS row and nothing else.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_SCALAR_FORMULA_OP_INTERFACE
#define WHALE_SCALAR_FORMULA_OP_INTERFACE

include "mlir/IR/OpBase.td"

def Whale_ScalarFormulaOpInterface : OpInterface<"ScalarFormulaOpInterface"> {
  let description = [{
    `buildScalar` computes y = f(x) for one element; `buildScalarGradient`
    computes dx = g * f'(x) from x, y = f(x) and the output gradient g.
    Both are static: whale.formula_grad names the op whose derivative it
    computes and has no instance of it.
  }];
  let cppNamespace = "::whale";

  let methods = [
    StaticInterfaceMethod<"The element of the result from the operand's.",
      "::whale::ScalarHandle", "buildScalar",
      (ins "::whale::ScalarBuilder &":$s, "::whale::ScalarHandle":$x)>,
    StaticInterfaceMethod<[{
        The element of the operand's gradient from the operand's `x`, the
        result's `y` and the result's gradient `g`.
      }],
      "::whale::ScalarHandle", "buildScalarGradient",
      (ins "::whale::ScalarBuilder &":$s, "::whale::ScalarHandle":$x,
           "::whale::ScalarHandle":$y, "::whale::ScalarHandle":$g)>,
    StaticInterfaceMethod<"FLOPs of one element of the gradient.",
      "int64_t", "getGradientFlopsPerElement", (ins)>,
  ];
}

#endif // WHALE_SCALAR_FORMULA_OP_INTERFACE
