module attributes {whale.config = #whale.settings<split_rows = "whole", num_micro_batch = 2>} {
func.func @pipe(%x: tensor<8x16xf32>, %y: tensor<8xi32>) -> tensor<f32> attributes {whale.model, whale.train = {data = {batch = 16 : i64, kind = "synthetic", seed = 1 : i64}, optimizer = {kind = "sgd", lr = 1.000000e-01 : f64, momentum = 0.000000e+00 : f64, weight_decay = 0.000000e+00 : f64}, steps = 2 : i64}} {
  %h = whale.taskgraph split(2) -> (tensor<8x32xf32>) {
    %w1 = whale.param "w1" normal [0.0, 2.0e-02] : tensor<16x32xf32>
    %a = whale.matmul %x, %w1 : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    %r = whale.relu %a : tensor<8x32xf32>
    whale.yield %r : tensor<8x32xf32>
  }
  %l = whale.taskgraph split(2) -> (tensor<f32>) {
    %w2 = whale.param "w2" normal [0.0, 2.0e-02] : tensor<32x10xf32>
    %z = whale.matmul %h, %w2 : tensor<8x32xf32>, tensor<32x10xf32> -> tensor<8x10xf32>
    %c = whale.cross_entropy %z, %y : tensor<8x10xf32>, tensor<8xi32> -> tensor<8xf32>
    %m = whale.reduce_mean %c axes = [0] : tensor<8xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
}
