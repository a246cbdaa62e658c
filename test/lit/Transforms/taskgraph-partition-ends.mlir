// RUN: whale-opt %s --split-input-file --verify-diagnostics '--whale-taskgraph-partition=auto-parallel=true num-task-graph=2 ends=1,3' | FileCheck %s

// The planner's later runs make the first run's cut again: `ends` (op
// counts) instead of choosing, whatever the costs say.
// CHECK-LABEL: func.func @given
// CHECK: whale.taskgraph replicate
// CHECK-COUNT-1: whale.relu
// CHECK: whale.yield
// CHECK: whale.taskgraph replicate
// CHECK-COUNT-2: whale.relu
// CHECK: whale.yield
func.func @given(%x: tensor<8x8xf32>) -> tensor<8x8xf32> attributes {whale.model} {
  %a = whale.relu %x : tensor<8x8xf32>
  %b = whale.relu %a : tensor<8x8xf32>
  %c = whale.relu %b : tensor<8x8xf32>
  return %c : tensor<8x8xf32>
}

// -----

// expected-error@+1 {{ends must be 2 increasing op counts ending at 4}}
func.func @wrong(%x: tensor<8x8xf32>) -> tensor<8x8xf32> attributes {whale.model} {
  %a = whale.relu %x : tensor<8x8xf32>
  %b = whale.relu %a : tensor<8x8xf32>
  %c = whale.relu %b : tensor<8x8xf32>
  %d = whale.relu %c : tensor<8x8xf32>
  return %d : tensor<8x8xf32>
}
