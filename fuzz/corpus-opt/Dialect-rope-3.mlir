func.func @theta(%q: tensor<16x8xf32>) {
  %a = whale.rope %q theta = 1.0 : tensor<16x8xf32>
  return
}
