func.func @written_between(%g: tensor<16x32xf32>, %v: tensor<512xf32>) -> (tensor<16x32xbf16>, tensor<16x32xbf16>, tensor<512xbf16>, tensor<512xbf16>) {
  %w = whale.param "w" normal [0.0, 0.02] : tensor<16x32xf32>
  %w1 = whale.cast %w : tensor<16x32xf32> to tensor<16x32xbf16>
  whale.adam_update %w, %g {beta1 = 9.000000e-01 : f64, beta2 = 0.999 : f64, eps = 1.000000e-08 : f64, lr = 1.000000e-03 : f64, weight_decay = 0.000000e+00 : f64} : tensor<16x32xf32>
  %w2 = whale.cast %w : tensor<16x32xf32> to tensor<16x32xbf16>
  %v1 = whale.cast %v : tensor<512xf32> to tensor<512xbf16>
  %view = whale.reshape %v : tensor<512xf32> -> tensor<16x32xf32>
  %c = whale.clip_grad_norm %view max_norm = 1.0 over "stages" : tensor<16x32xf32> -> tensor<16x32xf32>
  %v2 = whale.cast %v : tensor<512xf32> to tensor<512xbf16>
  return %w1, %w2, %v1, %v2 : tensor<16x32xbf16>, tensor<16x32xbf16>, tensor<512xbf16>, tensor<512xbf16>
}
