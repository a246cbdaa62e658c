func.func @owner_negative(%g: tensor<4xf32>) {
  %w = whale.param "w" zeros [] : tensor<4xf32>
  whale.adam_update %w, %g {lr = 0.1 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64, owner = -1 : i64, group = "replicas"} : tensor<4xf32>
  return
}
