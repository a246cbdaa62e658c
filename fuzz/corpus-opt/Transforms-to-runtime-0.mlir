func.func @m(%x: tensor<4x8xf32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph replicate -> (tensor<f32>) {
    %w = whale.param "m/w" normal [0.0, 0.02] : tensor<8x8xf32>
    %h = whale.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %r = whale.relu %h : tensor<4x8xf32>
    %s = whale.reduce_mean %r axes = [0, 1] : tensor<4x8xf32> -> tensor<f32>
    whale.yield %s : tensor<f32>
  }
  return %l : tensor<f32>
}
