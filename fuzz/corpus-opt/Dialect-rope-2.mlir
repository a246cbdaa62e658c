func.func @rank(%q: tensor<8xf32>) {
  %a = whale.rope %q theta = 1.0e4 : tensor<8xf32>
  return
}
