func.func @empty_name() {
  %0 = whale.param "" zeros [] : tensor<4xf32>
  return
}
