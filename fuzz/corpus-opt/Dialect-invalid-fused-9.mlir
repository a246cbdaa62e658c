func.func @sum_read_inside(%x: tensor<4x4xf32>) {
  %r = whale.fused(%x) : (tensor<4x4xf32>) -> (tensor<4xf32>) {
  ^bb0(%a: tensor<4x4xf32>):
    %s = whale.reduce_sum %a axes = [1] : tensor<4x4xf32> -> tensor<4xf32>
    %n = whale.neg %s : tensor<4xf32>
    whale.fused_yield %n : tensor<4xf32>
  }
  return
}
