// RUN: whale-opt %s --whale-annotate-cost="totals-only=true" | FileCheck %s

// TaskGraphs and functions carry the totals of their bodies; with
// totals-only the ops inside are left alone.

// CHECK-LABEL: func.func @model
// CHECK-SAME: whale.cost = {bytes_read = 2048 : i64, bytes_written = 2048 : i64, flops = 4224 : i64, memory = 2048 : i64}
// CHECK: whale.taskgraph replicate(2) -> (tensor<8x16xf32>) attributes {whale.cost = {bytes_read = 1536 : i64, bytes_written = 1536 : i64, flops = 4096 : i64, memory = 1536 : i64}}
// CHECK-NOT: whale.cost
// CHECK: whale.yield
func.func @model(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %h = whale.taskgraph replicate(2) -> (tensor<8x16xf32>) {
    %w = whale.param "m/w" normal [0.0, 0.02] : tensor<16x16xf32>
    %y = whale.matmul %x, %w : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
    whale.yield %y : tensor<8x16xf32>
  }
  %r = whale.relu %h : tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
