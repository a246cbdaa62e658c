func.func @f16_tensor(%x: tensor<4xf32>) -> tensor<4xf16> attributes {whale.model} {
  %c = whale.constant 1.0 : tensor<4xf16>
  return %c : tensor<4xf16>
}
