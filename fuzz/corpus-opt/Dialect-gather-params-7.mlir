func.func @group_without_owner() {
  // expected-error @+1 {{takes a group and shards only with an owner}}
  %w = whale.param "m/w" zeros [] {group = "replicas"} : tensor<4x4xf32>
  return
}
