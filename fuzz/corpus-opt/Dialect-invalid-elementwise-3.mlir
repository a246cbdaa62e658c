func.func @result_shape(%a: tensor<8x1xf32>, %b: tensor<1x4xf32>) {
  %0 = whale.div %a, %b : tensor<8x1xf32>, tensor<1x4xf32> -> tensor<8x1xf32>
  return
}
