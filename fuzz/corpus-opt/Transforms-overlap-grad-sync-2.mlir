func.func @m_stage1(%h: tensor<2x8xf32>, %dy: tensor<2x3xf32>) -> tensor<f32> attributes {whale.rank = {stage = 1 : i64}} {
  %w1 = whale.param "m/w1" zeros [] : tensor<8x3xf32>
  %ga = whale.matmul_grad %h, %w1, %dy operand = 1 : tensor<2x8xf32>, tensor<8x3xf32>, tensor<2x3xf32> -> tensor<8x3xf32>
  %dxa = whale.matmul_grad %h, %w1, %dy operand = 0 : tensor<2x8xf32>, tensor<8x3xf32>, tensor<2x3xf32> -> tensor<2x8xf32>
  whale.send %dxa to stage 0 tag 0 : tensor<2x8xf32>
  %gb = whale.matmul_grad %h, %w1, %dy operand = 1 : tensor<2x8xf32>, tensor<8x3xf32>, tensor<2x3xf32> -> tensor<8x3xf32>
  %dxb = whale.matmul_grad %h, %w1, %dy operand = 0 : tensor<2x8xf32>, tensor<8x3xf32>, tensor<2x3xf32> -> tensor<2x8xf32>
  whale.send %dxb to stage 0 tag 1 : tensor<2x8xf32>
  %s = whale.add %ga, %gb : tensor<8x3xf32>, tensor<8x3xf32> -> tensor<8x3xf32>
  %r = whale.all_reduce %s over "replicas" : tensor<8x3xf32> -> tensor<8x3xf32>
  whale.sgd_update %w1, %r {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<8x3xf32>
  %l = whale.constant 0.0 : tensor<f32>
  return %l : tensor<f32>
}
