func.func @matmul_dout(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>, %d: tensor<8x5xf32>) {
  %0 = whale.matmul_grad %a, %b, %d operand = 0 : tensor<8x16xf32>, tensor<16x4xf32>, tensor<8x5xf32> -> tensor<8x16xf32>
  return
}
