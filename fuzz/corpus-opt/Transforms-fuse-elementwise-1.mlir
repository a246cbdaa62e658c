func.func @two_results(%x: tensor<4x8xf32>, %dy: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %g = whale.gelu %x : tensor<4x8xf32>
  %d = whale.unary_grad gelu %x, %g, %dy : tensor<4x8xf32>
  %m = whale.matmul %g, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %r = whale.add %m, %d : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
