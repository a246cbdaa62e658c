func.func @m_stage0(%g0: tensor<4xf32>) -> tensor<f32> attributes {whale.rank = {replicas = 2 : i64, stage = 0 : i64}} {
  %w = whale.param "m/w" zeros [] : tensor<4xf32>
  %r = whale.all_reduce %g0 over "replicas" : tensor<4xf32> -> tensor<4xf32>
  whale.sgd_update %w, %r {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>
  %l = whale.constant 0.0 : tensor<f32>
  return %l : tensor<f32>
}
