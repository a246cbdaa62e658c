func.func @loss_read_again(%logits: tensor<8x100xbf16>, %y: tensor<8xi32>, %dloss: tensor<8xf32>, %b: tensor<100xf32>) -> (tensor<8x100xbf16>, tensor<100xf32>, tensor<8x100xf32>) {
  %g = whale.cross_entropy_grad %logits, %y, %dloss : tensor<8x100xbf16>, tensor<8xi32>, tensor<8xf32> -> f32
  %r = whale.cast %g : tensor<8x100xf32> to tensor<8x100xbf16>
  %db = whale.binary_grad add %g, %b, %g operand = 1 : tensor<8x100xf32>, tensor<100xf32>, tensor<8x100xf32> -> tensor<100xf32>
  return %r, %db, %g : tensor<8x100xbf16>, tensor<100xf32>, tensor<8x100xf32>
}
