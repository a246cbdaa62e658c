func.func @softmax_last_axis(%x: tensor<8x16xf32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph split -> (tensor<f32>) {
    %w = whale.param "w" normal [0.0, 0.02] : tensor<16x64xf32>
    %y = whale.matmul %x, %w : tensor<8x16xf32>, tensor<16x64xf32> -> tensor<8x64xf32>
    %p = whale.softmax %y axis = -1 : tensor<8x64xf32>
    %m = whale.reduce_mean %p axes = [0, 1] : tensor<8x64xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
