func.func @split_to_split(%x: tensor<8x16xf32>) -> tensor<f32> attributes {whale.model} {
  %h = whale.taskgraph split -> (tensor<8x32xf32>) {
    %w = whale.param "w" normal [0.0, 2.0e-02] : tensor<16x32xf32>
    %z = whale.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    whale.yield %z : tensor<8x32xf32>
  }
  %l = whale.taskgraph split -> (tensor<f32>) {
    %r = whale.relu %h : tensor<8x32xf32>
    %w2 = whale.param "w2" normal [0.0, 2.0e-02] : tensor<32x16xf32>
    %y = whale.matmul %r, %w2 : tensor<8x32xf32>, tensor<32x16xf32> -> tensor<8x16xf32>
    %m = whale.reduce_mean %y axes = [0, 1] : tensor<8x16xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
