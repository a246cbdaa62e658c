func.func @clip_owners_count(%a: tensor<4xf32>, %b: tensor<2xf32>) {
  %c:2 = whale.clip_grad_norm %a, %b max_norm = 1.0 {owners = array<i64: 0>} : tensor<4xf32>, tensor<2xf32> -> tensor<4xf32>, tensor<2xf32>
  return
}
