func.func @step(%q: tensor<1x4x1x8xf32>, %k: tensor<1x2x1x8xf32>, %v: tensor<1x2x1x8xf32>, %kc: tensor<1x2x16x8xf32>, %vc: tensor<1x2x16x8xf32>, %p: tensor<i32>) -> (tensor<1x4x1x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) {
  %o, %kc2, %vc2 = whale.kv_attention %q, %k, %v into %kc, %vc at %p scale = 0.3535534 : tensor<1x4x1x8xf32>, tensor<1x2x1x8xf32>, tensor<1x2x16x8xf32>
  return %o, %kc2, %vc2 : tensor<1x4x1x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>
}
