// RUN: whale-opt %s --verify-diagnostics --whale-virtual-devices=devices=2\ micro-batches=3 --whale-pipeline=micro-batches=3

// Interleaving runs micro-batches in groups of as many as there are stages.
module attributes {whale.config = #whale.settings<virtual_stages = 2>} {
  // expected-error@+1 {{interleaves 2 chunks a stage over 2 stages, which runs micro-batches in groups of 2: num_micro_batch = 3 must be a multiple of 2}}
  func.func @odd(%x: tensor<12x4xf32>) -> tensor<f32> attributes {whale.model} {
    %a = whale.taskgraph replicate -> (tensor<12x4xf32>) {
      %r = whale.relu %x : tensor<12x4xf32>
      whale.yield %r : tensor<12x4xf32>
    }
    %b = whale.taskgraph replicate -> (tensor<12x4xf32>) {
      %r = whale.relu %a : tensor<12x4xf32>
      whale.yield %r : tensor<12x4xf32>
    }
    %c = whale.taskgraph replicate -> (tensor<12x4xf32>) {
      %r = whale.relu %b : tensor<12x4xf32>
      whale.yield %r : tensor<12x4xf32>
    }
    %l = whale.taskgraph replicate -> (tensor<f32>) {
      %m = whale.reduce_mean %c axes = [0, 1] : tensor<12x4xf32> -> tensor<f32>
      whale.yield %m : tensor<f32>
    }
    return %l : tensor<f32>
  }
}
