func.func @sgd_range(%g: tensor<4xf32>) {
  %p = whale.param "p" zeros [] : tensor<4xf32>
  whale.sgd_update %p, %g {lr = 0.1 : f64, momentum = 1.0 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>
  return
}
