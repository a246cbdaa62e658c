// RUN: whale-opt %s -split-input-file -whale-to-runtime -verify-diagnostics

// A parameter's value is the step's starting one (what -cse assumes when
// it merges its readers), while the runtime's tensor is the store the
// update overwrites: a read after the update is refused, not run on the
// new values.
func.func @read_after_update(%g: tensor<4xf32>) -> tensor<4xf32> attributes {whale.rank = {stage = 0 : i64}} {
  %w = whale.param "w" zeros [] : tensor<4xf32>
  // expected-note@+1 {{written here}}
  whale.sgd_update %w, %g {lr = 1.000000e-01 : f64, momentum = 0.000000e+00 : f64, weight_decay = 0.000000e+00 : f64} : tensor<4xf32>
  // expected-error@+1 {{reads parameter 'w' after the step wrote it}}
  %n = whale.neg %w : tensor<4xf32>
  return %n : tensor<4xf32>
}

// -----

// Writers of the store may follow one another: the owner's update, then
// its broadcast to the group.
func.func @update_then_broadcast(%g: tensor<4xf32>) -> tensor<f32> attributes {whale.rank = {stage = 0 : i64}} {
  %w = whale.param "w" zeros [] : tensor<4xf32>
  %n = whale.neg %w : tensor<4xf32>
  whale.sgd_update %w, %g {lr = 1.000000e-01 : f64, momentum = 0.000000e+00 : f64, weight_decay = 0.000000e+00 : f64, owner = 0 : i64, group = "replicas"} : tensor<4xf32>
  whale.broadcast %w from [0] over "replicas" : tensor<4xf32>
  %s = whale.reduce_sum %n axes = [0] : tensor<4xf32> -> tensor<f32>
  return %s : tensor<f32>
}
