func.func @rounded_layernorm(%x: tensor<4x8xf32>, %h: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xbf16>) {
  %s = whale.add %x, %h : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %y = whale.layernorm %s, %g, %b eps = 1.0e-5 : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
  %r = whale.cast %y : tensor<4x8xf32> to tensor<4x8xbf16>
  return %s, %r : tensor<4x8xf32>, tensor<4x8xbf16>
}
