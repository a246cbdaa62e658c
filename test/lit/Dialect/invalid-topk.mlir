// RUN: whale-opt %s -split-input-file -verify-diagnostics

func.func @k(%g: tensor<16x8xf32>) {
  // expected-error @+1 {{k = 9 must be from 1 to 8}}
  %v = whale.topk %g k = 9 : tensor<16x8xf32> -> tensor<16x9xf32>
  return
}

// -----

func.func @indices(%g: tensor<16x8xf32>) {
  // expected-error @+1 {{indices are i32, got 'f32'}}
  %v = whale.topk %g k = 2 indices : tensor<16x8xf32> -> tensor<16x2xf32>
  return
}

// -----

func.func @shape(%g: tensor<16x8xf32>) {
  // expected-error @+1 {{result}}
  %v = whale.topk %g k = 2 : tensor<16x8xf32> -> tensor<16x3xf32>
  return
}

// -----

func.func @grad(%g: tensor<16x8xf32>, %d: tensor<16x3xf32>) {
  // expected-error @+1 {{dy}}
  %x = whale.topk_grad %g, %d k = 2 : tensor<16x8xf32>, tensor<16x3xf32>
  return
}
