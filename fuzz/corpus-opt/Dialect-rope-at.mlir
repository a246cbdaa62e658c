func.func @at(%q: tensor<2x4x1x8xf32>, %p: tensor<i32>) -> tensor<2x4x1x8xf32> {
  %a = whale.rope %q at %p theta = 1.0e4 : tensor<2x4x1x8xf32>
  return %a : tensor<2x4x1x8xf32>
}
