// RUN: whale-opt %s --split-input-file --whale-taskgraph-partition=auto-parallel=true\ num-task-graph=2 | FileCheck %s

// Four ops of equal FLOPs cut for two devices, the first three times as
// fast: it takes three of them, so both stages take the same time.
// CHECK-LABEL: func.func @by_rate
// CHECK: whale.taskgraph replicate
// CHECK-COUNT-3: whale.relu
// CHECK: whale.yield
// CHECK: whale.taskgraph replicate
// CHECK-COUNT-1: whale.relu
// CHECK: whale.yield
module attributes {whale.cluster = {flops = array<f64: 3.0e4, 1.0e4>, memory = array<i64: 0, 0>}} {
func.func @by_rate(%x: tensor<8x8xf32>) -> tensor<8x8xf32> attributes {whale.model} {
  %a = whale.relu %x : tensor<8x8xf32>
  %b = whale.relu %a : tensor<8x8xf32>
  %c = whale.relu %b : tensor<8x8xf32>
  %d = whale.relu %c : tensor<8x8xf32>
  return %d : tensor<8x8xf32>
}
}

// -----

// With memory limits, stage 0 goes to the device with the most memory
// (-whale-balance orders them so): here the slow one, which then gets one
// op of the four.
// CHECK-LABEL: func.func @by_memory_order
// CHECK: whale.taskgraph replicate
// CHECK-COUNT-1: whale.relu
// CHECK: whale.yield
// CHECK: whale.taskgraph replicate
// CHECK-COUNT-3: whale.relu
module attributes {whale.cluster = {flops = array<f64: 3.0e4, 1.0e4>, memory = array<i64: 1000000, 2000000>}} {
func.func @by_memory_order(%x: tensor<8x8xf32>) -> tensor<8x8xf32> attributes {whale.model} {
  %a = whale.relu %x : tensor<8x8xf32>
  %b = whale.relu %a : tensor<8x8xf32>
  %c = whale.relu %b : tensor<8x8xf32>
  %d = whale.relu %c : tensor<8x8xf32>
  return %d : tensor<8x8xf32>
}
}
