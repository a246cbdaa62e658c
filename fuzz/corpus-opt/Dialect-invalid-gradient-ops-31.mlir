func.func @slice_rank(%d: tensor<8x2xf32>) {
  %0 = whale.slice_grad %d axis = 0, start = 0 : tensor<8x2xf32> -> tensor<16xf32>
  return
}
