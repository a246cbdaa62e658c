func.func @rope(%q: tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32> {
  %a = whale.rope %q theta = 1.0e4 : tensor<2x4x16x8xf32>
  %b = whale.rope %a theta = 5.0e5 inverse : tensor<2x4x16x8xf32>
  %c = whale.rope %b theta = 5.0e5 scaling = [8.0, 1.0, 4.0, 8192.0] inverse : tensor<2x4x16x8xf32>
  return %c : tensor<2x4x16x8xf32>
}
