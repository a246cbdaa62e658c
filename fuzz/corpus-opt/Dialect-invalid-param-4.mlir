func.func @uniform_order() {
  %0 = whale.param "p" uniform [1.0, -1.0] : tensor<4xf32>
  return
}
