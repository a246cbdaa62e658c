func.func @wait_argument(%p: !whale.pending) -> tensor<4xf32> {
  %s = whale.all_reduce_wait %p : tensor<4xf32>
  return %s : tensor<4xf32>
}
