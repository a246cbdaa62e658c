func.func @rms_norm_after_columns(%x: tensor<8x16xf32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph split -> (tensor<f32>) {
    %w1 = whale.param "w1" normal [0.0, 2.0e-02] : tensor<16x32xf32>
    %h = whale.matmul %x, %w1 : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    %g = whale.param "g" ones [] : tensor<32xf32>
    %n = whale.rms_norm %h, %g eps = 1.0e-5 : tensor<8x32xf32>, tensor<32xf32>
    %m = whale.reduce_mean %n axes = [0, 1] : tensor<8x32xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
