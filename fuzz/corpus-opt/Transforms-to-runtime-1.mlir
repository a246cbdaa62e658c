func.func @ops(%x: tensor<2x3x4xf32>, %g: tensor<4xf32>) -> tensor<24xf32> attributes {whale.model} {
  %w = whale.param "m/w" normal [0.0, 0.02] : tensor<2x3x4xf32>
  %a = whale.sub %x, %w : tensor<2x3x4xf32>, tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %s = whale.softmax %a axis = -1 : tensor<2x3x4xf32>
  %n = whale.layernorm %s, %g, %g eps = 1.0e-5 : tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>
  %t = whale.transpose %n permutation = [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %c = whale.slice %t axis = 0, start = 0, end = 2 : tensor<4x2x3xf32> -> tensor<2x2x3xf32>
  %j = whale.concat %c, %c axis = 0 : tensor<2x2x3xf32>, tensor<2x2x3xf32> -> tensor<4x2x3xf32>
  %k = whale.constant 2.0 : tensor<f32>
  %m = whale.mul %j, %k : tensor<4x2x3xf32>, tensor<f32> -> tensor<4x2x3xf32>
  %q = whale.causal_mask %m : tensor<4x2x3xf32>
  %r = whale.reshape %q : tensor<4x2x3xf32> -> tensor<24xf32>
  return %r : tensor<24xf32>
}
