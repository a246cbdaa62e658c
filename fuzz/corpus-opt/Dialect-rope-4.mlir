func.func @scaling_size(%q: tensor<16x8xf32>) {
  %a = whale.rope %q theta = 1.0e4 scaling = [8.0, 1.0] : tensor<16x8xf32>
  return
}
