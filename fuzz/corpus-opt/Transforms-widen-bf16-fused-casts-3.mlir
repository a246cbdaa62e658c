func.func @layernorm_scale_in_bf16(%x: tensor<4x16xbf16>, %r: tensor<4x16xbf16>, %g: tensor<16xbf16>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %xw = whale.cast %x : tensor<4x16xbf16> to tensor<4x16xf32>
  %rw = whale.cast %r : tensor<4x16xbf16> to tensor<4x16xf32>
  %gw = whale.cast %g : tensor<16xbf16> to tensor<16xf32>
  %s = whale.add %xw, %rw : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
  %n = whale.layernorm %s, %gw, %b eps = 1.0e-5 : tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>
  return %n : tensor<4x16xf32>
}
