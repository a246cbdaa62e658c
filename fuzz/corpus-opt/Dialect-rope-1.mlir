func.func @odd(%q: tensor<16x7xf32>) {
  %a = whale.rope %q theta = 1.0e4 : tensor<16x7xf32>
  return
}
