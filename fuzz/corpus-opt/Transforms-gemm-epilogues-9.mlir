func.func @amp_forward(%x: tensor<8x16xbf16>, %w: tensor<16x32xbf16>, %b: tensor<32xf32>, %dh: tensor<8x32xf32>) -> (tensor<8x32xbf16>, tensor<8x32xf32>) {
  %z = whale.matmul %x, %w : tensor<8x16xbf16>, tensor<16x32xbf16> -> tensor<8x32xbf16>
  %zw = whale.cast %z : tensor<8x32xbf16> to tensor<8x32xf32>
  %y = whale.add %zw, %b : tensor<8x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
  %h = whale.gelu %y : tensor<8x32xf32>
  %hb = whale.cast %h : tensor<8x32xf32> to tensor<8x32xbf16>
  %hw = whale.cast %hb : tensor<8x32xbf16> to tensor<8x32xf32>
  %dy = whale.unary_grad gelu %y, %hw, %dh : tensor<8x32xf32>
  return %hb, %dy : tensor<8x32xbf16>, tensor<8x32xf32>
}
