func.func @bf16_flags() {
  %w = whale.param "m/w" zeros [] : tensor<4x4xf32>
  %g = whale.gather_params %w from [0] over "replicas" {bf16 = array<i1: true, false>} : tensor<4x4xf32>
  return
}
