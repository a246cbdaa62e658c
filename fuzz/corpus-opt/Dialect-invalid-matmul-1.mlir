func.func @element_types(%a: tensor<8x16xf32>, %b: tensor<16x4xbf16>) {
  %0 = whale.matmul %a, %b : tensor<8x16xf32>, tensor<16x4xbf16> -> tensor<8x4xf32>
  return
}
