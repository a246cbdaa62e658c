func.func @adam_range(%g: tensor<4xf32>) {
  %p = whale.param "p" zeros [] : tensor<4xf32>
  whale.adam_update %p, %g {lr = 0.1 : f64, beta1 = 0.9 : f64, beta2 = 0.99 : f64, eps = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>
  return
}
