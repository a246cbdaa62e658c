module {
  func.func @by_owner(%g0: tensor<4x4xf32>, %g1: tensor<4xf32>, %g2: tensor<2x4xf32>) -> tensor<f32> attributes {whale.rank = {replicas = 8 : i64, stage = 0 : i64}} {
    %w0 = whale.param "w0" zeros [] : tensor<4x4xf32>
    %b0 = whale.param "b0" zeros [] : tensor<4xf32>
    %w1 = whale.param "w1" zeros [] : tensor<2x4xf32>
    whale.adam_update %w0, %g0 {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64, owner = 5 : i64, group = "replicas"} : tensor<4x4xf32>
    whale.adam_update %b0, %g1 {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64, owner = 7 : i64, group = "replicas"} : tensor<4xf32>
    whale.adam_update %w1, %g2 {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64, owner = 5 : i64, group = "replicas"} : tensor<2x4xf32>
    %l = whale.constant 0.0 : tensor<f32>
    return %l : tensor<f32>
  }
}
