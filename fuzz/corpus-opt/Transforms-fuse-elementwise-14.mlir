func.func @softmaxes(%x: tensor<2x8x16xf32>, %k: tensor<f32>, %c: tensor<2x1x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) {
  %m = whale.mul %x, %k : tensor<2x8x16xf32>, tensor<f32> -> tensor<2x8x16xf32>
  %p = whale.softmax %m axis = -1 : tensor<2x8x16xf32>
  %e = whale.exp %x : tensor<2x8x16xf32>
  %q = whale.softmax %e axis = 0 : tensor<2x8x16xf32>
  %r = whale.softmax %x axis = 2 : tensor<2x8x16xf32>
  %a = whale.add %x, %c : tensor<2x8x16xf32>, tensor<2x1x16xf32> -> tensor<2x8x16xf32>
  %t = whale.softmax %a axis = -1 : tensor<2x8x16xf32>
  return %p, %q, %r, %t : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>
}
