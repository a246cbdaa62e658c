func.func @slice_result(%x: tensor<8x16xf32>) {
  %0 = whale.slice %x axis = 1, start = 0, end = 4 : tensor<8x16xf32> -> tensor<8x5xf32>
  return
}
