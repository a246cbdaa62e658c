func.func @dtypes(%a: tensor<8xf32>, %b: tensor<8xi32>) {
  %0 = whale.mul %a, %b : tensor<8xf32>, tensor<8xi32> -> tensor<8xf32>
  return
}
