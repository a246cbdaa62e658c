func.func @no_broadcast(%x: tensor<3x4xf32>, %y: tensor<4x4xf32>) {
  %r = whale.fused(%x, %y) : (tensor<3x4xf32>, tensor<4x4xf32>) -> (tensor<4x4xf32>) {
  ^bb0(%a: tensor<3x4xf32>, %b: tensor<4x4xf32>):
    whale.fused_yield %b : tensor<4x4xf32>
  }
  return
}
