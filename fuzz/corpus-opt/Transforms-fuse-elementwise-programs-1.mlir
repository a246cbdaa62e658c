func.func @residual_layernorm(%x: tensor<4x8xf32>, %h: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %s = whale.add %x, %h : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %a = whale.gelu %s : tensor<4x8xf32>
  %y = whale.layernorm %a, %g, %b eps = 1.0e-5 : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %y : tensor<4x8xf32>
}
