// RUN: whale-opt %s -split-input-file --whale-autodiff -verify-diagnostics

// expected-error @+1 {{a differentiated model returns a scalar floating-point loss, not 'tensor<4xf32>'}}
func.func @vector(%x: tensor<4xf32>) -> tensor<4xf32> attributes {whale.model} {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{a differentiated model returns one loss}}
func.func @two(%x: tensor<f32>) -> (tensor<f32>, tensor<f32>) attributes {whale.model} {
  return %x, %x : tensor<f32>, tensor<f32>
}

// -----

// Gradient ops have no gradients of their own (no second derivatives).
func.func @second(%x: tensor<4xf32>) -> tensor<f32> attributes {whale.model} {
  %p = whale.param "p" ones [] : tensor<4xf32>
  %y = whale.relu %p : tensor<4xf32>
  // expected-error @+1 {{has no gradient, but the loss depends on it}}
  %g = whale.unary_grad relu %p, %y, %x : tensor<4xf32>
  %s = whale.reduce_sum %g axes = [0] : tensor<4xf32> -> tensor<f32>
  return %s : tensor<f32>
}
