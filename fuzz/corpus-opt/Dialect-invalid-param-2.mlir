func.func @zeros_args() {
  %0 = whale.param "p" zeros [1.0] : tensor<4xf32>
  return
}
