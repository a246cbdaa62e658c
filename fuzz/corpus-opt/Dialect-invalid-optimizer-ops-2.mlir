func.func @adam_not_a_param(%x: tensor<4xf32>, %g: tensor<4xf32>) {
  whale.adam_update %x, %g {lr = 0.1 : f64, beta1 = 0.9 : f64, beta2 = 0.99 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>
  return
}
