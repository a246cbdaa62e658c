module attributes {whale.config = #whale.settings<virtual_stages = 2>} {
  func.func @four(%x: tensor<16x4xf32>) -> tensor<f32> attributes {whale.model} {
    %a = whale.taskgraph replicate -> (tensor<16x4xf32>) {
      %r = whale.relu %x : tensor<16x4xf32>
      whale.yield %r : tensor<16x4xf32>
    }
    %b = whale.taskgraph replicate -> (tensor<16x4xf32>) {
      %r = whale.relu %a : tensor<16x4xf32>
      whale.yield %r : tensor<16x4xf32>
    }
    %c = whale.taskgraph replicate -> (tensor<16x4xf32>) {
      %r = whale.relu %b : tensor<16x4xf32>
      whale.yield %r : tensor<16x4xf32>
    }
    %l = whale.taskgraph replicate -> (tensor<f32>) {
      %m = whale.reduce_mean %c axes = [0, 1] : tensor<16x4xf32> -> tensor<f32>
      whale.yield %m : tensor<f32>
    }
    return %l : tensor<f32>
  }
}
