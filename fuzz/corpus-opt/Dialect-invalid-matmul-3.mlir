func.func @batch(%a: tensor<2x8x16xf32>, %b: tensor<3x16x4xf32>) {
  %0 = whale.matmul %a, %b : tensor<2x8x16xf32>, tensor<3x16x4xf32> -> tensor<2x8x4xf32>
  return
}
