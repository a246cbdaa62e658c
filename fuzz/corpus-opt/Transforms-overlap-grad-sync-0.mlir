func.func @m_stage0(%x: tensor<2x4xf32>, %h: tensor<2x8xf32>, %dy: tensor<2x3xf32>) -> tensor<f32> attributes {whale.rank = {stage = 0 : i64}} {
  %w0 = whale.param "m/w0" zeros [] : tensor<4x8xf32>
  %w1 = whale.param "m/w1" zeros [] : tensor<8x3xf32>
  %g1a = whale.matmul_grad %h, %w1, %dy operand = 1 : tensor<2x8xf32>, tensor<8x3xf32>, tensor<2x3xf32> -> tensor<8x3xf32>
  %dxa = whale.matmul_grad %h, %w1, %dy operand = 0 : tensor<2x8xf32>, tensor<8x3xf32>, tensor<2x3xf32> -> tensor<2x8xf32>
  %g0a = whale.matmul_grad %x, %w0, %dxa operand = 1 : tensor<2x4xf32>, tensor<4x8xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
  %g1b = whale.matmul_grad %h, %w1, %dy operand = 1 : tensor<2x8xf32>, tensor<8x3xf32>, tensor<2x3xf32> -> tensor<8x3xf32>
  %dxb = whale.matmul_grad %h, %w1, %dy operand = 0 : tensor<2x8xf32>, tensor<8x3xf32>, tensor<2x3xf32> -> tensor<2x8xf32>
  %g0b = whale.matmul_grad %x, %w0, %dxb operand = 1 : tensor<2x4xf32>, tensor<4x8xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
  %s0 = whale.add %g0a, %g0b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %s1 = whale.add %g1a, %g1b : tensor<8x3xf32>, tensor<8x3xf32> -> tensor<8x3xf32>
  %r1 = whale.all_reduce %s1 over "replicas" : tensor<8x3xf32> -> tensor<8x3xf32>
  %r0 = whale.all_reduce %s0 over "replicas" : tensor<4x8xf32> -> tensor<4x8xf32>
  whale.sgd_update %w0, %r0 {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<4x8xf32>
  whale.sgd_update %w1, %r1 {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<8x3xf32>
  %l = whale.constant 0.0 : tensor<f32>
  return %l : tensor<f32>
}
