module attributes {whale.config = #whale.settings<split_rows = "whole", num_micro_batch = 2>} {
func.func @three(%x: tensor<8x16xf32>) -> tensor<f32> attributes {whale.model, whale.train = {data = {batch = 16 : i64, kind = "synthetic", seed = 1 : i64}, optimizer = {kind = "sgd", lr = 1.000000e-01 : f64, momentum = 0.000000e+00 : f64, weight_decay = 0.000000e+00 : f64}, steps = 2 : i64}} {
  %q, %k, %v = whale.taskgraph split(2) -> (tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>) {
    %wq = whale.param "wq" normal [0.0, 2.0e-02] : tensor<16x32xf32>
    %wk = whale.param "wk" normal [0.0, 2.0e-02] : tensor<16x32xf32>
    %wv = whale.param "wv" normal [0.0, 2.0e-02] : tensor<16x32xf32>
    %a = whale.matmul %x, %wq : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    %b = whale.matmul %x, %wk : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    %c = whale.matmul %x, %wv : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    whale.yield %a, %b, %c : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>
  }
  %l = whale.taskgraph split(2) -> (tensor<f32>) {
    %s = whale.add %q, %k : tensor<8x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
    %p = whale.mul %s, %v : tensor<8x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
    %m = whale.reduce_mean %p axes = [0, 1] : tensor<8x32xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
}
