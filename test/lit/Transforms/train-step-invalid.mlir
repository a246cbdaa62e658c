// RUN: whale-opt %s -split-input-file --whale-train-step -verify-diagnostics

// expected-error @+1 {{has no gradient function; run -whale-autodiff first}}
func.func @m(%x: tensor<f32>) -> tensor<f32> attributes {whale.model, whale.train = {optimizer = {kind = "sgd", lr = 0.1}, steps = 1}} {
  return %x : tensor<f32>
}

// -----

// An optimizer the train step does not know is refused by the dialect's
// check of the train block, before any pass.
// expected-error @+1 {{'whale.train' entry 'optimizer' must be a dictionary whose 'kind' is one of the optimizer constructors}}
func.func @n(%x: tensor<f32>) -> tensor<f32> attributes {whale.model, whale.train = {optimizer = {kind = "lamb"}, steps = 1}} {
  return %x : tensor<f32>
}
func.func @n_grad(%x: tensor<f32>) -> tensor<f32> attributes {whale.model, whale.gradients = []} {
  return %x : tensor<f32>
}
