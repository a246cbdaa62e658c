func.func @m_stage0(%x: tensor<2x4xf32>, %dy: tensor<2x8xf32>) -> tensor<f32> attributes {whale.rank = {stage = 0 : i64}} {
  %w0 = whale.param "m/w0" zeros [] : tensor<4x8xf32>
  %g = whale.matmul_grad %x, %w0, %dy operand = 1 : tensor<2x4xf32>, tensor<4x8xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
  %k = whale.mul %g, %g : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %s = whale.add %g, %g : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %r:2 = whale.all_reduce %s, %k over "shard_peers" {shards = 2 : i64} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>, tensor<4x8xf32>
  %c:2 = whale.clip_grad_norm %r#0, %r#1 max_norm = 1.0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>, tensor<4x8xf32>
  whale.sgd_update %w0, %c#0 {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<4x8xf32>
  %l = whale.constant 0.0 : tensor<f32>
  return %l : tensor<f32>
}
