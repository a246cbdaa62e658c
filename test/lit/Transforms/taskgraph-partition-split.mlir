// RUN: whale-opt %s --split-input-file --whale-taskgraph-partition=auto-parallel=true\ num-task-graph=2\ split=2 | FileCheck %s
// RUN: whale-opt %s --split-input-file --whale-taskgraph-partition | FileCheck %s --check-prefix=CONFIG

// task_graph_split: each part of the cut is split over 2 devices. Four
// blocks of 2 devices: copy 0 takes devices 0-3, stage 0 the block 0-1,
// stage 1 the block 2-3. Block 2-3 is three times as fast, so stage 1
// takes three of the four ops.
// CHECK-LABEL: func.func @split_parts
// CHECK: whale.taskgraph split(2)
// CHECK-COUNT-1: whale.relu
// CHECK: whale.yield
// CHECK: whale.taskgraph split(2)
// CHECK-COUNT-3: whale.relu
// CHECK: whale.yield
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e4>, #whale.device<flops = 1.0e4>, #whale.device<flops = 3.0e4>, #whale.device<flops = 3.0e4>, #whale.device<flops = 1.0e4>, #whale.device<flops = 1.0e4>, #whale.device<flops = 3.0e4>, #whale.device<flops = 3.0e4>]>} {
func.func @split_parts(%x: tensor<8x8xf32>) -> tensor<8x8xf32> attributes {whale.model} {
  %a = whale.relu %x : tensor<8x8xf32>
  %b = whale.relu %a : tensor<8x8xf32>
  %c = whale.relu %b : tensor<8x8xf32>
  %d = whale.relu %c : tensor<8x8xf32>
  return %d : tensor<8x8xf32>
}
}

// -----

// The config asks the same: auto_parallel, 2 TaskGraphs, split over 4.
// CONFIG-LABEL: func.func @from_config
// CONFIG: whale.taskgraph split(4)
// CONFIG: whale.taskgraph split(4)
// CONFIG-NOT: whale.taskgraph
module attributes {whale.config = #whale.settings<auto_parallel = true, num_task_graph = 2, task_graph_split = 4>} {
func.func @from_config(%x: tensor<8x8xf32>) -> tensor<8x8xf32> attributes {whale.model} {
  %a = whale.relu %x : tensor<8x8xf32>
  %b = whale.relu %a : tensor<8x8xf32>
  return %b : tensor<8x8xf32>
}
}
