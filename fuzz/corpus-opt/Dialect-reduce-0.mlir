func.func @reductions(%x: tensor<8x16xf32>) {
  %0 = whale.reduce_sum %x axes = [1] : tensor<8x16xf32> -> tensor<8xf32>
  %1 = whale.reduce_mean %x axes = [0, 1] : tensor<8x16xf32> -> tensor<f32>
  %2 = whale.reduce_max %x axes = [1] {keepdim} : tensor<8x16xf32> -> tensor<8x1xf32>
  return
}
