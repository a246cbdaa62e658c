func.func @amp_weight_grad(%x: tensor<8x16xbf16>, %dyb: tensor<8x32xbf16>, %w: tensor<16x32xbf16>, %dyf: tensor<8x32xf32>, %z: tensor<8x32xf32>, %b: tensor<32xf32>) -> (tensor<16x32xf32>, tensor<32xf32>, tensor<16x32xf32>, tensor<32xf32>) {
  %dw = whale.matmul_grad %x, %w, %dyb operand = 1 : tensor<8x16xbf16>, tensor<16x32xbf16>, tensor<8x32xbf16> -> tensor<16x32xf32>
  %wide = whale.cast %dyb : tensor<8x32xbf16> to tensor<8x32xf32>
  %db = whale.binary_grad add %z, %b, %wide operand = 1 : tensor<8x32xf32>, tensor<32xf32>, tensor<8x32xf32> -> tensor<32xf32>
  %r = whale.cast %dyf : tensor<8x32xf32> to tensor<8x32xbf16>
  %dw2 = whale.matmul_grad %x, %w, %r operand = 1 : tensor<8x16xbf16>, tensor<16x32xbf16>, tensor<8x32xbf16> -> tensor<16x32xf32>
  %db2 = whale.binary_grad add %z, %b, %dyf operand = 1 : tensor<8x32xf32>, tensor<32xf32>, tensor<8x32xf32> -> tensor<32xf32>
  return %dw, %db, %dw2, %db2 : tensor<16x32xf32>, tensor<32xf32>, tensor<16x32xf32>, tensor<32xf32>
}
