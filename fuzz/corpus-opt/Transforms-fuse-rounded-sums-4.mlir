func.func @loss(%logits: tensor<2x8x100xbf16>, %y: tensor<2x8xi32>, %dloss: tensor<2x8xf32>, %h: tensor<2x8x16xbf16>, %w: tensor<16x100xbf16>, %b: tensor<100xf32>) -> (tensor<16x100xf32>, tensor<100xf32>) {
  %g = whale.cross_entropy_grad %logits, %y, %dloss : tensor<2x8x100xbf16>, tensor<2x8xi32>, tensor<2x8xf32> -> f32
  %r = whale.cast %g : tensor<2x8x100xf32> to tensor<2x8x100xbf16>
  %dw = whale.matmul_grad %h, %w, %r operand = 1 : tensor<2x8x16xbf16>, tensor<16x100xbf16>, tensor<2x8x100xbf16> -> tensor<16x100xf32>
  %db = whale.binary_grad add %g, %b, %g operand = 1 : tensor<2x8x100xf32>, tensor<100xf32>, tensor<2x8x100xf32> -> tensor<100xf32>
  return %dw, %db : tensor<16x100xf32>, tensor<100xf32>
}
