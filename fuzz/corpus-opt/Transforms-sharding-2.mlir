func.func @split_to_replicate(%x: tensor<8x16xf32>) -> tensor<f32> attributes {whale.model} {
  %h = whale.taskgraph split -> (tensor<8x32xf32>) {
    %w = whale.param "w" normal [0.0, 2.0e-02] : tensor<16x32xf32>
    %z = whale.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    whale.yield %z : tensor<8x32xf32>
  }
  %l = whale.taskgraph replicate -> (tensor<f32>) {
    %m = whale.reduce_mean %h axes = [0, 1] : tensor<8x32xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
