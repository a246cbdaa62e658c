func.func @owner_without_group(%g: tensor<4xf32>) {
  %w = whale.param "w" zeros [] : tensor<4xf32>
  whale.sgd_update %w, %g {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64, owner = 1 : i64} : tensor<4xf32>
  return
}
