func.func @read_outside_kernels(%x: tensor<4x8xbf16>, %w: tensor<8x4xbf16>) -> tensor<4x4xf32> {
  %m = whale.matmul %x, %w : tensor<4x8xbf16>, tensor<8x4xbf16> -> tensor<4x4xbf16>
  %c = whale.causal_mask %m : tensor<4x4xbf16>
  %f = whale.cast %c : tensor<4x4xbf16> to tensor<4x4xf32>
  return %f : tensor<4x4xf32>
}
