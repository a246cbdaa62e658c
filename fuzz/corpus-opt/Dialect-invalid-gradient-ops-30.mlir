func.func @slice_axis(%d: tensor<8x2xf32>) {
  %0 = whale.slice_grad %d axis = 2, start = 0 : tensor<8x2xf32> -> tensor<8x4xf32>
  return
}
