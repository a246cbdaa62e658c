module attributes {whale.config = #whale.settings<shard_optimizer = true>} {
  func.func @m_stage0(%g0: tensor<4x4xf32>, %g1: tensor<4xf32>) -> tensor<f32> attributes {whale.rank = {replicas = 4 : i64, stage = 0 : i64}} {
    %w = whale.param "m/w" zeros [] : tensor<4x4xf32>
    %v = whale.param "m/v" zeros [] : tensor<4xf32>
    %r:2 = whale.all_reduce %g0, %g1 over "shard_peers" {shards = 2 : i64} : tensor<4x4xf32>, tensor<4xf32> -> tensor<4x4xf32>, tensor<4xf32>
    %c:2 = whale.clip_grad_norm %r#0, %r#1 max_norm = 1.0 {shards = 2 : i64, sharded = array<i1: true, true>} : tensor<4x4xf32>, tensor<4xf32> -> tensor<4x4xf32>, tensor<4xf32>
    whale.sgd_update %w, %c#0 {lr = 0.1 : f64, momentum = 0.9 : f64, weight_decay = 0.0 : f64} : tensor<4x4xf32>
    whale.sgd_update %v, %c#1 {lr = 0.1 : f64, momentum = 0.9 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>
    %l = whale.constant 0.0 : tensor<f32>
    return %l : tensor<f32>
  }
}
