func.func @norms(%x: tensor<8x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) {
  %0 = whale.softmax %x axis = -1 : tensor<8x16xf32>
  %1 = whale.softmax %x axis = 0 : tensor<8x16xf32>
  %2 = whale.layernorm %x, %g, %b eps = 1.0e-5 : tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>
  return
}

func.func @lookup_and_loss(%t: tensor<256x64xf32>, %ids: tensor<4x32xi32>, %l: tensor<4x32x256xf32>, %big: tensor<8x100000xf32>, %y: tensor<8xi64>) {
  %0 = whale.embedding %t[%ids] : tensor<256x64xf32>, tensor<4x32xi32> -> tensor<4x32x64xf32>
  %1 = whale.cross_entropy %l, %ids : tensor<4x32x256xf32>, tensor<4x32xi32> -> tensor<4x32xf32>
  %2 = whale.cross_entropy %big, %y : tensor<8x100000xf32>, tensor<8xi64> -> tensor<8xf32>
  return
}
