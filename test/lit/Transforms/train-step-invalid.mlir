// RUN: whale-opt %s -split-input-file --whale-train-step -verify-diagnostics

// expected-error @+1 {{has no gradient function; run -whale-autodiff first}}
func.func @m(%x: tensor<f32>) -> tensor<f32> attributes {whale.model, whale.train = {optimizer = {kind = "sgd", lr = 0.1}, steps = 1}} {
  return %x : tensor<f32>
}

// -----

// expected-error @+1 {{the train block needs an optimizer: sgd, adam or adamw}}
func.func @n(%x: tensor<f32>) -> tensor<f32> attributes {whale.model, whale.train = {optimizer = {kind = "lamb"}, steps = 1}} {
  return %x : tensor<f32>
}
func.func @n_grad(%x: tensor<f32>) -> tensor<f32> attributes {whale.model, whale.gradients = []} {
  return %x : tensor<f32>
}
