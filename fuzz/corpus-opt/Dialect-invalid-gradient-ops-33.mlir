func.func @slice_fit(%d: tensor<8x2xf32>) {
  %0 = whale.slice_grad %d axis = 1, start = 3 : tensor<8x2xf32> -> tensor<8x4xf32>
  return
}
