func.func @heads(%q: tensor<1x3x1x8xf32>, %k: tensor<1x2x1x8xf32>, %c: tensor<1x2x16x8xf32>, %p: tensor<i32>) {
  %o, %a, %b = whale.kv_attention %q, %k, %k into %c, %c at %p scale = 1.0 : tensor<1x3x1x8xf32>, tensor<1x2x1x8xf32>, tensor<1x2x16x8xf32>
  return
}
