// RUN: whale-opt %s --split-input-file --verify-diagnostics --whale-pipeline=micro-batches=4\ schedule=gpipe | FileCheck %s --check-prefix=GPIPE
// RUN: whale-opt %s --split-input-file --verify-diagnostics --whale-pipeline=micro-batches=4\ schedule=1f1b | FileCheck %s --check-prefix=ONEF

// GPipe: every forward, then every backward, on each stage.
// GPIPE-LABEL: func.func @two_stages
// GPIPE-SAME: global_batch = 16 : i64
// GPIPE-SAME: micro_batch = 4 : i64, micro_batches = 4 : i64
// GPIPE-SAME: schedule = "gpipe"
// GPIPE: schedule = #whale.schedule<F0 F1 F2 F3 B0 B1 B2 B3>, stage = 0
// GPIPE: schedule = #whale.schedule<F0 F1 F2 F3 B0 B1 B2 B3>, stage = 1
// 1F1B: stage 0 runs one forward ahead, the last stage none.
// ONEF: schedule = #whale.schedule<F0 F1 B0 F2 B1 F3 B2 B3>, stage = 0
// ONEF: schedule = #whale.schedule<F0 B0 F1 B1 F2 B2 F3 B3>, stage = 1
func.func @two_stages(%x: tensor<16x4xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {devices = 2 : i64, grid = array<i64: 0, 1>, replicas = 1 : i64, stages = 2 : i64}} {
  %h = whale.taskgraph replicate -> (tensor<16x4xf32>) attributes {stage = 0 : i64} {
    %a = whale.relu %x : tensor<16x4xf32>
    whale.yield %a : tensor<16x4xf32>
  }
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {stage = 1 : i64} {
    %m = whale.reduce_mean %h axes = [0, 1] : tensor<16x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// With one stage, micro-batches are gradient accumulation in either mode.
// GPIPE-LABEL: func.func @accumulate
// GPIPE: schedule = #whale.schedule<F0 B0 F1 B1 F2 B2 F3 B3>, stage = 0
func.func @accumulate(%x: tensor<16x4xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {devices = 1 : i64, grid = array<i64: 0>, replicas = 1 : i64, stages = 1 : i64}} {
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {stage = 0 : i64} {
    %m = whale.reduce_mean %x axes = [0, 1] : tensor<16x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// expected-error@+1 {{the global batch of 16 is too small for 8 replicas x 4 micro-batches: each replica needs a sample in each micro-batch; use a batch of at least 32}}
func.func @too_many(%x: tensor<16x4xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {devices = 8 : i64, grid = array<i64: 0, 1, 2, 3, 4, 5, 6, 7>, replicas = 8 : i64, stages = 1 : i64}} {
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {stage = 0 : i64} {
    %m = whale.reduce_mean %x axes = [0, 1] : tensor<16x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// expected-error@+1 {{has no plan; run -whale-virtual-devices first}}
func.func @unplanned(%x: tensor<16x4xf32>) -> tensor<16x4xf32> attributes {whale.model} {
  return %x : tensor<16x4xf32>
}
