func.func @owners_count() {
  %w = whale.param "m/w" zeros [] : tensor<4x4xf32>
  // expected-error @+1 {{has 2 owners for 1 parameters: it needs one per parameter}}
  %g = whale.gather_params %w from [0, 1] over "replicas" : tensor<4x4xf32>
  return
}
