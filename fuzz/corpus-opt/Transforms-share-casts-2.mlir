func.func @conversion_written(%h: tensor<16x32xbf16>) -> (tensor<16x32xf32>, tensor<16x32xf32>) {
  %g1 = whale.cast %h : tensor<16x32xbf16> to tensor<16x32xf32>
  %c = whale.clip_grad_norm %g1 max_norm = 1.0 over "stages" : tensor<16x32xf32> -> tensor<16x32xf32>
  %g2 = whale.cast %h : tensor<16x32xbf16> to tensor<16x32xf32>
  return %c, %g2 : tensor<16x32xf32>, tensor<16x32xf32>
}
