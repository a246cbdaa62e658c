func.func @owned_among_stages() {
  // expected-error @+1 {{is owned among the replicas or the shard peers that sum its gradient, not the stages}}
  %w = whale.param "m/w" zeros [] {group = "stages", owner = 1 : i64} : tensor<4x4xf32>
  return
}
