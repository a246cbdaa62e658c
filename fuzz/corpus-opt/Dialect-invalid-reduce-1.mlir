func.func @order(%x: tensor<8x16xf32>) {
  %0 = whale.reduce_mean %x axes = [1, 0] : tensor<8x16xf32> -> tensor<f32>
  return
}
