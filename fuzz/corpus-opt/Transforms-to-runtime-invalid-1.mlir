func.func @bf16_tensor(%x: tensor<4xbf16>) -> tensor<4xbf16> attributes {whale.model} {
  %r = whale.relu %x : tensor<4xbf16>
  return %r : tensor<4xbf16>
}
