func.func @integers(%a: tensor<8x16xi32>, %b: tensor<16x4xi32>) {
  %0 = whale.matmul %a, %b : tensor<8x16xi32>, tensor<16x4xi32> -> tensor<8x4xi32>
  return
}
