func.func @owner_group_unknown(%g: tensor<4xf32>) {
  %w = whale.param "w" zeros [] : tensor<4xf32>
  whale.sgd_update %w, %g {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64, owner = 0 : i64, group = "pods"} : tensor<4xf32>
  return
}
