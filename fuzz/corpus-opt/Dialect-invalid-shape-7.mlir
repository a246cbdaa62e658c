func.func @slice_range(%x: tensor<8x16xf32>) {
  %0 = whale.slice %x axis = 1, start = 4, end = 20 : tensor<8x16xf32> -> tensor<8x16xf32>
  return
}
