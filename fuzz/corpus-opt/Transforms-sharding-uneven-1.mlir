func.func @mean_of_parts(%x: tensor<8x16xf32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph split -> (tensor<f32>) {
    %w = whale.param "w" normal [0.0, 2.0e-02] : tensor<16x32xf32>
    %h = whale.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    %r = whale.relu %h : tensor<8x32xf32>
    %m = whale.reduce_mean %r axes = [0, 1] : tensor<8x32xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
