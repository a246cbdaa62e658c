func.func @not_a_param(%x: tensor<4xf32>, %g: tensor<4xf32>) {
  whale.sgd_update %x, %g {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>
  return
}
