module attributes {whale.config = #whale.settings<split_rows = "whole">} {
func.func @hybrid(%x: tensor<16x16xf32>, %y: tensor<16xi32>) -> tensor<f32> attributes {whale.model, whale.train = {data = {batch = 32 : i64, kind = "synthetic", seed = 1 : i64}, optimizer = {kind = "sgd", lr = 1.000000e-01 : f64, momentum = 0.000000e+00 : f64, weight_decay = 0.000000e+00 : f64}, steps = 2 : i64}} {
  %h = whale.taskgraph replicate -> (tensor<16x16xf32>) {
    %w0 = whale.param "features" normal [0.0, 2.0e-02] : tensor<16x16xf32>
    %f = whale.matmul %x, %w0 : tensor<16x16xf32>, tensor<16x16xf32> -> tensor<16x16xf32>
    %a = whale.relu %f : tensor<16x16xf32>
    whale.yield %a : tensor<16x16xf32>
  }
  %l = whale.taskgraph split(2) -> (tensor<f32>) {
    %w = whale.param "head" normal [0.0, 2.0e-02] : tensor<16x64xf32>
    %z = whale.matmul %h, %w : tensor<16x16xf32>, tensor<16x64xf32> -> tensor<16x64xf32>
    %c = whale.cross_entropy %z, %y : tensor<16x64xf32>, tensor<16xi32> -> tensor<16xf32>
    %m = whale.reduce_mean %c axes = [0] : tensor<16xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
}
