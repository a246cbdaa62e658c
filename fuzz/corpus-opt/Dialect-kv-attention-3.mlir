func.func @width(%q: tensor<1x4x1x8xf32>, %k: tensor<1x2x1x4xf32>, %c: tensor<1x2x16x4xf32>, %p: tensor<i32>) {
  %o, %a, %b = whale.kv_attention %q, %k, %k into %c, %c at %p scale = 1.0 : tensor<1x4x1x8xf32>, tensor<1x2x1x4xf32>, tensor<1x2x16x4xf32>
  return
}
