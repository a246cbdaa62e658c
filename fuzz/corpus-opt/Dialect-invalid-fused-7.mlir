func.func @isolated(%x: tensor<4x4xf32>) {
  %r = whale.fused(%x) : (tensor<4x4xf32>) -> (tensor<4x4xf32>) {
  ^bb0(%a: tensor<4x4xf32>):
    %n = whale.add %a, %x : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    whale.fused_yield %n : tensor<4x4xf32>
  }
  return
}
