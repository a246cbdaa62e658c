func.func @weight_grad_mixed(%x: tensor<8x16xbf16>, %dy: tensor<8x32xf32>) {
  %0:2 = whale.linear_weight_grad %x, %dy : tensor<8x16xbf16>, tensor<8x32xf32> -> tensor<16x32xf32>, tensor<32xf32>
  return
}
