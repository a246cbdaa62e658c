func.func @mlp(%x: tensor<8x16xf32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph split -> (tensor<f32>) {
    %w1 = whale.param "w1" normal [0.0, 2.0e-02] : tensor<16x32xf32>
    %h = whale.matmul %x, %w1 : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    %r = whale.relu %h : tensor<8x32xf32>
    %w2 = whale.param "w2" normal [0.0, 2.0e-02] : tensor<32x16xf32>
    %y = whale.matmul %r, %w2 : tensor<8x32xf32>, tensor<32x16xf32> -> tensor<8x16xf32>
    %m = whale.reduce_mean %y axes = [0, 1] : tensor<8x16xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
