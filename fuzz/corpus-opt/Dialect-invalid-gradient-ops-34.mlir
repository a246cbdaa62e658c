func.func @slice_negative_start(%d: tensor<8x2xf32>) {
  %0 = whale.slice_grad %d axis = 1, start = -1 : tensor<8x2xf32> -> tensor<8x4xf32>
  return
}
