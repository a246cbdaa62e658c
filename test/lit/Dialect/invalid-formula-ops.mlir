// RUN: whale-opt %s -split-input-file -verify-diagnostics

func.func @not_a_formula(%x: tensor<4xf32>) {
  // expected-error @+1 {{takes the gradient of 'whale.gelu', which is not an elementwise op defined by its formula}}
  %0 = whale.formula_grad "whale.gelu" %x, %x, %x : tensor<4xf32>
  return
}

// -----

func.func @unknown_op(%x: tensor<4xf32>) {
  // expected-error @+1 {{takes the gradient of 'whale.swish', which is not an elementwise op defined by its formula}}
  %0 = whale.formula_grad "whale.swish" %x, %x, %x : tensor<4xf32>
  return
}

// -----

func.func @integers(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be}}
  %0 = whale.silu %x : tensor<4xi32>
  return
}
