// RUN: whale-opt %s | whale-opt | FileCheck %s

// Ops defined by their formulas (ScalarFormulaOpInterface) and the
// gradient that names one.
// CHECK-LABEL: func.func @silu
// CHECK: %[[Y:.*]] = whale.silu %arg0 : tensor<4x8xf32>
// CHECK: whale.formula_grad "whale.silu" %arg0, %[[Y]], %arg1 : tensor<4x8xf32>
func.func @silu(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = whale.silu %x : tensor<4x8xf32>
  %dx = whale.formula_grad "whale.silu" %x, %y, %dy : tensor<4x8xf32>
  return %dx : tensor<4x8xf32>
}
