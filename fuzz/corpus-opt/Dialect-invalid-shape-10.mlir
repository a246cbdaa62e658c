func.func @slice_type(%x: tensor<8x16xf32>) {
  %0 = whale.slice %x axis = 1, start = 0, end = 4 : tensor<8x16xf32> -> tensor<8x4xf16>
  return
}
