func.func @other_shape(%x: tensor<4x4xf32>, %b: tensor<4xf32>) {
  %r = whale.fused(%x, %b) : (tensor<4x4xf32>, tensor<4xf32>) -> (tensor<4x4xf32>) {
  ^bb0(%a: tensor<4x4xf32>, %c: tensor<4xf32>):
    %n = whale.neg %c : tensor<4xf32>
    whale.fused_yield %a : tensor<4x4xf32>
  }
  return
}
