func.func @slice_negative_start(%x: tensor<8x16xf32>) {
  %0 = whale.slice %x axis = 1, start = -1, end = 4 : tensor<8x16xf32> -> tensor<8x5xf32>
  return
}
