func.func @bf16_to_f16(%a: tensor<8x16xbf16>, %b: tensor<16x4xbf16>) {
  %0 = whale.matmul %a, %b : tensor<8x16xbf16>, tensor<16x4xbf16> -> tensor<8x4xf16>
  return
}
