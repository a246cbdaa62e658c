func.func @slice_dims(%d: tensor<8x2xf32>) {
  %0 = whale.slice_grad %d axis = 1, start = 0 : tensor<8x2xf32> -> tensor<9x4xf32>
  return
}
