func.func @ce_labels(%l: tensor<8x10xf32>, %y: tensor<10xi32>) {
  %0 = whale.cross_entropy %l, %y : tensor<8x10xf32>, tensor<10xi32> -> tensor<8xf32>
  return
}
