func.func @arg_count() {
  %0 = whale.param "p" normal [0.02] : tensor<4xf32>
  return
}
