func.func @integer_param() {
  %0 = whale.param "p" zeros [] : tensor<4xi32>
  return
}
