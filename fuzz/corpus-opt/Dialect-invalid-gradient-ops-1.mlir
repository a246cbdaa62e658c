func.func @matmul_result(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>, %d: tensor<8x4xf32>) {
  %0 = whale.matmul_grad %a, %b, %d operand = 1 : tensor<8x16xf32>, tensor<16x4xf32>, tensor<8x4xf32> -> tensor<8x16xf32>
  return
}
