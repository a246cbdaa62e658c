func.func @result(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) {
  %0 = whale.matmul %a, %b : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<4x8xf32>
  return
}
