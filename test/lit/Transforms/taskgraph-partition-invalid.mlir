// RUN: whale-opt %s --split-input-file --verify-diagnostics --whale-taskgraph-partition

// auto_parallel cannot make more parts than there are ops.
module attributes {whale.config = #whale.settings<auto_parallel = true, num_task_graph = 3>} {
  // expected-error@+1 {{cannot be cut into 3 TaskGraphs: it has only 2 ops}}
  func.func @small(%x: tensor<8x4xf32>) -> tensor<f32> attributes {whale.model} {
    %a = whale.relu %x : tensor<8x4xf32>
    %l = whale.reduce_mean %a axes = [0, 1] : tensor<8x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
