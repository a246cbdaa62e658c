func.func @clip_owners_range(%a: tensor<4xf32>) {
  %c = whale.clip_grad_norm %a max_norm = 1.0 {owners = array<i64: -2>} : tensor<4xf32> -> tensor<4xf32>
  return
}
