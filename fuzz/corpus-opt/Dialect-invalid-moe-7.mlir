func.func @hot(%e: tensor<2x6xi32>) {
  %h = whale.one_hot %e classes = 4 : tensor<2x6xi32> -> tensor<2x6x3xf32>
  return
}
