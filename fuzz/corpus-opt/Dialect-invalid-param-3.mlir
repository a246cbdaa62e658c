func.func @negative_std() {
  %0 = whale.param "p" normal [0.0, -1.0] : tensor<4xf32>
  return
}
