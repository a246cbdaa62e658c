// RUN: whale-opt %s --split-input-file --verify-diagnostics --whale-data-parallel=bucket-bytes=140 | FileCheck %s

// Buckets of at most 140 bytes (m/c alone is 128), filled from the last parameter back (the
// order backward produces gradients); the weight is micro / global batch.
// CHECK-LABEL: func.func @buckets
// CHECK-SAME: buckets = {{\[\[\["m/c"\], \["m/b", "m/a"\]\]\]}}
// CHECK-SAME: grad_weight = 1.250000e-01
func.func @buckets(%x: tensor<2x4xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {global_batch = 16 : i64, micro_batch = 2 : i64, micro_batches = 2 : i64, replicas = 4 : i64, stages = 1 : i64}} {
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {stage = 0 : i64} {
    %a = whale.param "m/a" zeros [] : tensor<4xf32>
    %b = whale.param "m/b" zeros [] : tensor<4xf32>
    %c = whale.param "m/c" zeros [] : tensor<4x8xf32>
    %s = whale.add %x, %a : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
    %t = whale.add %s, %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
    %u = whale.matmul %t, %c : tensor<2x4xf32>, tensor<4x8xf32> -> tensor<2x8xf32>
    %m = whale.reduce_mean %u axes = [0, 1] : tensor<2x8xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// expected-error@+1 {{needs the loss to be a mean over the batch}}
func.func @sum_loss(%x: tensor<2x4xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {global_batch = 4 : i64, micro_batch = 2 : i64, micro_batches = 1 : i64, replicas = 2 : i64, stages = 1 : i64}} {
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {stage = 0 : i64} {
    %m = whale.reduce_sum %x axes = [0, 1] : tensor<2x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// A TaskGraph's stage must be one of the plan's.
func.func @stage_past_stages(%x: tensor<2x4xf32>) -> tensor<f32> attributes {whale.model, whale.plan = {global_batch = 4 : i64, micro_batch = 2 : i64, micro_batches = 1 : i64, replicas = 2 : i64, stages = 1 : i64}} {
  // expected-error@+1 {{is stage 1, but the plan has 1 stage}}
  %l = whale.taskgraph replicate -> (tensor<f32>) attributes {stage = 1 : i64} {
    %a = whale.param "m/a" zeros [] : tensor<4xf32>
    %s = whale.add %x, %a : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
    %m = whale.reduce_mean %s axes = [0, 1] : tensor<2x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
