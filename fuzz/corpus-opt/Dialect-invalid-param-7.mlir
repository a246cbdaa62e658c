func.func @bad_init() {
  %0 = whale.param "p" kaiming [] : tensor<4xf32>
  return
}
