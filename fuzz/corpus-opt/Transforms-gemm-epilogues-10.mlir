func.func @amp_rounded_bias_gradient(%x: tensor<8x16xbf16>, %w: tensor<16x32xbf16>, %b: tensor<32xf32>, %dy: tensor<8x32xf32>) -> (tensor<8x4x8xbf16>, tensor<32xf32>) {
  %z = whale.matmul %x, %w : tensor<8x16xbf16>, tensor<16x32xbf16> -> tensor<8x32xbf16>
  %zw = whale.cast %z : tensor<8x32xbf16> to tensor<8x32xf32>
  %y = whale.add %zw, %b : tensor<8x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
  %yb = whale.cast %y : tensor<8x32xf32> to tensor<8x32xbf16>
  %h = whale.reshape %yb : tensor<8x32xbf16> -> tensor<8x4x8xbf16>
  %db = whale.binary_grad add %zw, %b, %dy operand = 1 : tensor<8x32xf32>, tensor<32xf32>, tensor<8x32xf32> -> tensor<32xf32>
  return %h, %db : tensor<8x4x8xbf16>, tensor<32xf32>
}
