func.func @scaling_order(%q: tensor<16x8xf32>) {
  %a = whale.rope %q theta = 1.0e4 scaling = [8.0, 4.0, 1.0, 8192.0] : tensor<16x8xf32>
  return
}
