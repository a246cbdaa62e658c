func.func @reduce_type(%x: tensor<8x4xf32>, %d: tensor<8xf16>) {
  %0 = whale.reduce_grad mean %x, %d axes = [1] : tensor<8x4xf32>, tensor<8xf16>
  return
}
