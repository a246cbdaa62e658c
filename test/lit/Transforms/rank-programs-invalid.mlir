// RUN: whale-opt %s --split-input-file --verify-diagnostics --whale-rank-programs

// The model must be at its micro-batch: rank programs' shapes are static.
// expected-error@+1 {{is elaborated at a batch of 8, but rank programs need it at its micro-batch of 2}}
func.func @m(%x: tensor<8x4xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {buckets = [[]], global_batch = 8 : i64, grad_weight = 2.500000e-01 : f64, grid = array<i64: 0>, micro_batch = 2 : i64, micro_batches = 4 : i64, replicas = 1 : i64, stages = 1 : i64}} {
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {schedule = #whale.schedule<F0 B0>, stage = 0 : i64} {
    %m = whale.reduce_mean %x axes = [0, 1] : tensor<8x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// expected-error@+1 {{is not fully planned; run -whale-virtual-devices, -whale-pipeline and -whale-data-parallel first}}
func.func @half(%x: tensor<2x4xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {stages = 1 : i64}} {
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {stage = 0 : i64} {
    %m = whale.reduce_mean %x axes = [0, 1] : tensor<2x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// Interleaved: a TaskGraph's chunk must be one of the plan's.
func.func @chunk(%x: tensor<2x4xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {buckets = [[], []], chunks = 2 : i64, global_batch = 2 : i64, grad_weight = 1.000000e+00 : f64, grid = array<i64: 0, 1>, micro_batch = 2 : i64, micro_batches = 1 : i64, replicas = 1 : i64, stages = 2 : i64}} {
  // expected-error@+1 {{is chunk 2 of a stage, but the plan has 2 chunks a stage}}
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {chunk = 2 : i64, schedule = #whale.schedule<F0 B0>, stage = 0 : i64} {
    %m = whale.reduce_mean %x axes = [0, 1] : tensor<2x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// A stage's schedule runs the plan's chunks.
// expected-error@+1 {{stage 0's schedule runs 1 chunk, but the plan has 2}}
func.func @schedule(%x: tensor<2x4xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {buckets = [[]], chunks = 2 : i64, global_batch = 2 : i64, grad_weight = 1.000000e+00 : f64, grid = array<i64: 0>, micro_batch = 2 : i64, micro_batches = 1 : i64, replicas = 1 : i64, stages = 1 : i64}} {
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {chunk = 0 : i64, schedule = #whale.schedule<F0 B0>, stage = 0 : i64} {
    %m = whale.reduce_mean %x axes = [0, 1] : tensor<2x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// Replicas sum their gradients in the buckets -whale-data-parallel records,
// one list per stage: a plan without them is refused, not read past.
// expected-error@+1 {{is not fully planned; run -whale-virtual-devices, -whale-pipeline and -whale-data-parallel first}}
func.func @no_buckets(%x: tensor<2x4xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {global_batch = 4 : i64, grad_weight = 5.000000e-01 : f64, grid = array<i64: 0, 1>, micro_batch = 2 : i64, micro_batches = 1 : i64, replicas = 2 : i64, stages = 1 : i64}} {
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {schedule = #whale.schedule<F0 B0>, stage = 0 : i64} {
    %m = whale.reduce_mean %x axes = [0, 1] : tensor<2x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// A TaskGraph's stage must be one of the plan's (a stage past `stages` once
// indexed past the per-stage tables).
func.func @stage(%x: tensor<2x4xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {buckets = [[]], global_batch = 2 : i64, grad_weight = 1.000000e+00 : f64, grid = array<i64: 0>, micro_batch = 2 : i64, micro_batches = 1 : i64, replicas = 1 : i64, stages = 1 : i64}} {
  // expected-error@+1 {{is stage 3, but the plan has 1 stage}}
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {schedule = #whale.schedule<F0 B0>, stage = 3 : i64} {
    %m = whale.reduce_mean %x axes = [0, 1] : tensor<2x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
