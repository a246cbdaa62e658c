func.func @m(%x: tensor<4x3xf32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph replicate -> (tensor<f32>) {
    %w = whale.param "m/w" normal [0.0, 0.02] : tensor<3x2xf32>
    %u = whale.param "m/unused" zeros [] : tensor<2xf32>
    %y = whale.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
    %m = whale.reduce_mean %y axes = [0, 1] : tensor<4x2xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
