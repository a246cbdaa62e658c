// RUN: whale-opt %s --split-input-file --verify-diagnostics --whale-virtual-devices=devices=4 | FileCheck %s

// Outside a pipeline every TaskGraph runs on every device; a split
// TaskGraph without a count splits over all of them (the paper's hybrid).
// CHECK-LABEL: func.func @hybrid
// CHECK-SAME: replicas = 4 : i64, shards = array<i64: 4>, stages = 1 : i64
// CHECK: whale.taskgraph replicate {{.*}}attributes {stage = 0 : i64, virtual_device = array<i64: 0, 1, 2, 3>}
// CHECK: whale.taskgraph split {{.*}}attributes {shards = 4 : i64, stage = 0 : i64, virtual_device = array<i64: 0, 1, 2, 3>}
func.func @hybrid(%x: tensor<8x4xf32>) -> tensor<f32> attributes {whale.model} {
  %h = whale.taskgraph replicate -> (tensor<8x4xf32>) {
    %a = whale.relu %x : tensor<8x4xf32>
    whale.yield %a : tensor<8x4xf32>
  }
  %l = whale.taskgraph split -> (tensor<f32>) {
    %m = whale.reduce_mean %h axes = [0, 1] : tensor<8x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// split(2) on 4 devices: two shard groups of two (data parallel between).
// CHECK-LABEL: func.func @groups
// CHECK-SAME: replicas = 4 : i64, shards = array<i64: 2>, stages = 1 : i64
func.func @groups(%x: tensor<8x4xf32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph split(2) -> (tensor<f32>) {
    %m = whale.reduce_mean %x axes = [0, 1] : tensor<8x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

func.func @uneven(%x: tensor<8x4xf32>) -> tensor<f32> attributes {whale.model} {
  // expected-error@+1 {{splits over 3 devices, which the 4 devices of its stage cannot hold a whole number of times}}
  %l = whale.taskgraph split(3) -> (tensor<f32>) {
    %m = whale.reduce_mean %x axes = [0, 1] : tensor<8x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

func.func @mixed(%x: tensor<8x4xf32>) -> tensor<f32> attributes {whale.model} {
  %h = whale.taskgraph split(2) -> (tensor<8x4xf32>) {
    %a = whale.relu %x : tensor<8x4xf32>
    whale.yield %a : tensor<8x4xf32>
  }
  // expected-error@+1 {{splits over 4 devices but another split TaskGraph of its stage splits over 2}}
  %l = whale.taskgraph split(4) -> (tensor<f32>) {
    %m = whale.reduce_mean %h axes = [0, 1] : tensor<8x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
