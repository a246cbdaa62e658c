func.func @degrees(%x: tensor<8x4xf32>) -> tensor<f32> attributes {whale.model} {
  %h = whale.taskgraph replicate(3) -> (tensor<8x4xf32>) {
    %a = whale.relu %x : tensor<8x4xf32>
    whale.yield %a : tensor<8x4xf32>
  }
  %l = whale.taskgraph replicate(1) -> (tensor<f32>) {
    %m = whale.reduce_mean %h axes = [0, 1] : tensor<8x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
