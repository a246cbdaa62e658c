func.func @owners_count(%a: tensor<4xf32>, %b: tensor<2xf32>) -> tensor<4xf32> {
  %r:2 = whale.all_reduce %a, %b over "replicas" {owners = array<i64: 0>} : tensor<4xf32>, tensor<2xf32> -> tensor<4xf32>, tensor<2xf32>
  return %r#0 : tensor<4xf32>
}
