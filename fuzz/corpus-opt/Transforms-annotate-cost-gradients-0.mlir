func.func @costs(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>, %d: tensor<8x4xf32>,
                 %b: tensor<4xf32>, %y: tensor<8xi32>, %l: tensor<8xf32>) {
  %0 = whale.matmul_grad %x, %w, %d operand = 1 : tensor<8x16xf32>, tensor<16x4xf32>, tensor<8x4xf32> -> tensor<16x4xf32>
  %1 = whale.binary_grad add %d, %b, %d operand = 1 : tensor<8x4xf32>, tensor<4xf32>, tensor<8x4xf32> -> tensor<4xf32>
  %2 = whale.unary_grad gelu %d, %d, %d : tensor<8x4xf32>
  %3 = whale.unary_grad relu %d, %d, %d : tensor<8x4xf32>
  %4:3 = whale.layernorm_grad %d, %b, %d eps = 1.0e-5 : tensor<8x4xf32>, tensor<4xf32>
  %5 = whale.cross_entropy_grad %d, %y, %l : tensor<8x4xf32>, tensor<8xi32>, tensor<8xf32>
  return
}
