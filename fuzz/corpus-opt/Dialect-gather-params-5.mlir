func.func @owner_without_group() {
  // expected-error @+1 {{has an owner but no group to own it in}}
  %w = whale.param "m/w" zeros [] {owner = 1 : i64} : tensor<4x4xf32>
  return
}
