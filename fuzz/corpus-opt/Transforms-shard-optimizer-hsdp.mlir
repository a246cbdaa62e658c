module attributes {whale.config = #whale.settings<shard_optimizer = true, shard_group = 2>} {
  func.func @m_stage0(%g0: tensor<16x8xf32>, %g1: tensor<8xf32>, %g2: tensor<8x4xf32>, %g3: tensor<4xf32>) -> tensor<f32> attributes {whale.rank = {replicas = 4 : i64, stage = 0 : i64}} {
    %w0 = whale.param "m/w0" zeros [] : tensor<16x8xf32>
    %b0 = whale.param "m/b0" zeros [] : tensor<8xf32>
    %w1 = whale.param "m/w1" zeros [] : tensor<8x4xf32>
    %b1 = whale.param "m/b1" zeros [] : tensor<4xf32>
    %r:4 = whale.all_reduce %g0, %g1, %g2, %g3 over "replicas" : tensor<16x8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<4xf32> -> tensor<16x8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<4xf32>
    %c:4 = whale.clip_grad_norm %r#0, %r#1, %r#2, %r#3 max_norm = 1.0 : tensor<16x8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<4xf32> -> tensor<16x8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<4xf32>
    whale.adam_update %w0, %c#0 {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<16x8xf32>
    whale.adam_update %b0, %c#1 {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<8xf32>
    whale.adam_update %w1, %c#2 {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<8x4xf32>
    whale.adam_update %b1, %c#3 {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>
    %l = whale.constant 0.0 : tensor<f32>
    return %l : tensor<f32>
  }
}
