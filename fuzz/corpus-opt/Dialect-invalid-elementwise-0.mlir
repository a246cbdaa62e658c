func.func @broadcast(%a: tensor<8x16xf32>, %b: tensor<8xf32>) {
  %0 = whale.add %a, %b : tensor<8x16xf32>, tensor<8xf32> -> tensor<8x16xf32>
  return
}
