func.func @result(%x: tensor<8x16xf32>) {
  %0 = whale.reduce_max %x axes = [1] {keepdim} : tensor<8x16xf32> -> tensor<8xf32>
  return
}
