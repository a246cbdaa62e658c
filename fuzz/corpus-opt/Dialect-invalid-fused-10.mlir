func.func @sum_of_broadcast(%x: tensor<4x4xf32>, %b: tensor<4xf32>) {
  %r:2 = whale.fused(%x, %b) : (tensor<4x4xf32>, tensor<4xf32>) -> (tensor<4x4xf32>, tensor<f32>) {
  ^bb0(%a: tensor<4x4xf32>, %c: tensor<4xf32>):
    %s = whale.reduce_sum %c axes = [0] : tensor<4xf32> -> tensor<f32>
    whale.fused_yield %a, %s : tensor<4x4xf32>, tensor<f32>
  }
  return
}
