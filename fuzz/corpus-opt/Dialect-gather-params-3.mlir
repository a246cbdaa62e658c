func.func @another_owner() {
  %w = whale.param "m/w" zeros [] {group = "replicas", owner = 1 : i64} : tensor<4x4xf32>
  // expected-error @+1 {{gathers 'm/w' from 0 over "replicas", but its whale.param places it on 1 over "replicas"}}
  %g = whale.gather_params %w from [0] over "replicas" : tensor<4x4xf32>
  return
}
