func.func @slice_type(%d: tensor<8x2xf32>) {
  %0 = whale.slice_grad %d axis = 1, start = 0 : tensor<8x2xf32> -> tensor<8x4xf16>
  return
}
