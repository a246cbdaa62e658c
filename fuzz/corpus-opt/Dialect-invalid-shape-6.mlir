func.func @slice_axis(%x: tensor<8x16xf32>) {
  %0 = whale.slice %x axis = 3, start = 0, end = 1 : tensor<8x16xf32> -> tensor<8x1xf32>
  return
}
