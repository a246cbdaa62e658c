func.func @contracting(%a: tensor<8x16xf32>, %b: tensor<15x4xf32>) {
  %0 = whale.matmul %a, %b : tensor<8x16xf32>, tensor<15x4xf32> -> tensor<8x4xf32>
  return
}
