func.func @arguments(%x: tensor<4x4xf32>) {
  %r = whale.fused(%x) : (tensor<4x4xf32>) -> (tensor<4x4xf32>) {
  ^bb0(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>):
    whale.fused_yield %a : tensor<4x4xf32>
  }
  return
}
