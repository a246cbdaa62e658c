func.func @mlp(%x: tensor<4x8xbf16>, %w: tensor<8x16xbf16>, %b: tensor<16xbf16>, %v: tensor<16x8xbf16>) -> tensor<4x8xbf16> {
  %m = whale.matmul %x, %w : tensor<4x8xbf16>, tensor<8x16xbf16> -> tensor<4x16xbf16>
  %s = whale.add %m, %b : tensor<4x16xbf16>, tensor<16xbf16> -> tensor<4x16xbf16>
  %g = whale.gelu %s : tensor<4x16xbf16>
  %o = whale.matmul %g, %v : tensor<4x16xbf16>, tensor<16x8xbf16> -> tensor<4x8xbf16>
  return %o : tensor<4x8xbf16>
}
