func.func @stored_logits(%logits: tensor<4x16xbf16>, %y: tensor<4xi32>, %dl: tensor<4xf32>) -> (tensor<4xf32>, tensor<4x16xbf16>) {
  %w = whale.cast %logits : tensor<4x16xbf16> to tensor<4x16xf32>
  %l = whale.cross_entropy %w, %y : tensor<4x16xf32>, tensor<4xi32> -> tensor<4xf32>
  %g = whale.cross_entropy_grad %w, %y, %dl : tensor<4x16xf32>, tensor<4xi32>, tensor<4xf32>
  %r = whale.cast %g : tensor<4x16xf32> to tensor<4x16xbf16>
  return %l, %r : tensor<4xf32>, tensor<4x16xbf16>
}
