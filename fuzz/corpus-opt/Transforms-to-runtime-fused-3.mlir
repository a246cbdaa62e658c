func.func @residual_layernorm(%x: tensor<2x4x8xf32>, %h: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> attributes {whale.model} {
  %n = whale.fused(%x, %h, %g, %b) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>) {
  ^bb0(%a: tensor<2x4x8xf32>, %c: tensor<2x4x8xf32>, %gg: tensor<8xf32>, %bb: tensor<8xf32>):
    %s = whale.add %a, %c : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
    %y = whale.layernorm %s, %gg, %bb eps = 1.0e-5 : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
    whale.fused_yield %y : tensor<2x4x8xf32>
  }
  return %n : tensor<2x4x8xf32>
}
