func.func @weight_grad_bf16_dweight(%x: tensor<8x16xbf16>, %dy: tensor<8x32xbf16>) {
  %0:2 = whale.linear_weight_grad %x, %dy : tensor<8x16xbf16>, tensor<8x32xbf16> -> tensor<16x32xbf16>, tensor<32xf32>
  return
}
