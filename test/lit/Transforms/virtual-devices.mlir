// RUN: whale-opt %s --split-input-file --verify-diagnostics --whale-virtual-devices=devices=4\ micro-batches=2 | FileCheck %s

// Two TaskGraphs without counts in a pipeline: one device each per copy of
// the model, copied twice over 4 devices (nested data parallelism).
// CHECK-LABEL: func.func @pipeline
// CHECK-SAME: whale.plan = {devices = 4 : i64, grid = array<i64: 0, 2, 1, 3>, replicas = 2 : i64, shards = array<i64: 1, 1>, stages = 2 : i64}
// CHECK: whale.taskgraph replicate {{.*}}attributes {stage = 0 : i64, virtual_device = array<i64: 0, 2>}
// CHECK: whale.taskgraph replicate {{.*}}attributes {stage = 1 : i64, virtual_device = array<i64: 1, 3>}
func.func @pipeline(%x: tensor<8x4xf32>) -> tensor<f32> attributes {whale.model} {
  %h = whale.taskgraph replicate -> (tensor<8x4xf32>) {
    %a = whale.relu %x : tensor<8x4xf32>
    whale.yield %a : tensor<8x4xf32>
  }
  %l = whale.taskgraph replicate -> (tensor<f32>) {
    %m = whale.reduce_mean %h axes = [0, 1] : tensor<8x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// Counts: 2 + 2 devices per copy, one copy on 4; stage replicas in order.
// CHECK-LABEL: func.func @counted
// CHECK-SAME: grid = array<i64: 0, 1, 2, 3>, replicas = 2 : i64, shards = array<i64: 1, 1>, stages = 2 : i64
func.func @counted(%x: tensor<8x4xf32>) -> tensor<f32> attributes {whale.model} {
  %h = whale.taskgraph replicate(2) -> (tensor<8x4xf32>) {
    %a = whale.relu %x : tensor<8x4xf32>
    whale.yield %a : tensor<8x4xf32>
  }
  %l = whale.taskgraph replicate(2) -> (tensor<f32>) {
    %m = whale.reduce_mean %h axes = [0, 1] : tensor<8x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// expected-error@+1 {{asks for 2 + 1 = 3 devices per copy of the model (one per TaskGraph without a count), which 4 devices cannot hold a whole number of times: use 3, 6 or another multiple of 3 devices, or change the counts}}
func.func @uneven(%x: tensor<8x4xf32>) -> tensor<f32> attributes {whale.model} {
  %h = whale.taskgraph replicate(2) -> (tensor<8x4xf32>) {
    %a = whale.relu %x : tensor<8x4xf32>
    whale.yield %a : tensor<8x4xf32>
  }
  %l = whale.taskgraph replicate -> (tensor<f32>) {
    %m = whale.reduce_mean %h axes = [0, 1] : tensor<8x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

func.func @degrees(%x: tensor<8x4xf32>) -> tensor<f32> attributes {whale.model} {
  %h = whale.taskgraph replicate(3) -> (tensor<8x4xf32>) {
    %a = whale.relu %x : tensor<8x4xf32>
    whale.yield %a : tensor<8x4xf32>
  }
  // expected-error@+1 {{has 1 replicas but the first stage has 3: stages of different degrees pass activations between different numbers of ranks}}
  %l = whale.taskgraph replicate(1) -> (tensor<f32>) {
    %m = whale.reduce_mean %h axes = [0, 1] : tensor<8x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// A split stage in a pipeline: shard groups of two, one per stage here.
// CHECK-LABEL: func.func @split
// CHECK-SAME: shards = array<i64: 2, 2>
// CHECK: whale.taskgraph split(2) {{.*}}attributes {shards = 2 : i64, stage = 0 : i64, virtual_device = array<i64: 0, 1>}
func.func @split(%x: tensor<8x4xf32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph split(2) -> (tensor<f32>) {
    %m = whale.reduce_mean %x axes = [0, 1] : tensor<8x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  %k = whale.taskgraph split(2) -> (tensor<f32>) {
    whale.yield %l : tensor<f32>
  }
  return %k : tensor<f32>
}
