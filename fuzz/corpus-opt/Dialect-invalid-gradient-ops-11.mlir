func.func @softmax_axis(%y: tensor<8x4xf32>) {
  %0 = whale.softmax_grad %y, %y axis = 2 : tensor<8x4xf32>
  return
}
