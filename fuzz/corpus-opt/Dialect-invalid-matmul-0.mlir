func.func @rank(%a: tensor<16xf32>, %b: tensor<16x4xf32>) {
  %0 = whale.matmul %a, %b : tensor<16xf32>, tensor<16x4xf32> -> tensor<4xf32>
  return
}
