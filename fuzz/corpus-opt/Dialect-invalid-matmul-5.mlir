func.func @result_type(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) {
  %0 = whale.matmul %a, %b : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf16>
  return
}
