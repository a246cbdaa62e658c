func.func @layernorm_scale_inside(%x: tensor<4xf32>) {
  %r = whale.fused(%x) : (tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %e = whale.exp %a : tensor<4xf32>
    %n = whale.layernorm %a, %e, %e eps = 1.0e-5 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
    whale.fused_yield %n : tensor<4xf32>
  }
  return
}
