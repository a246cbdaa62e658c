func.func @matmul_grad_dout(%a: tensor<8x16xbf16>, %b: tensor<16x4xbf16>, %d: tensor<8x4xf32>) {
  %0 = whale.matmul_grad %a, %b, %d operand = 1 : tensor<8x16xbf16>, tensor<16x4xbf16>, tensor<8x4xf32> -> tensor<16x4xf32>
  return
}
