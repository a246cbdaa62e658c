// Started a layer ahead, waited for before the readers.
// CHECK-LABEL: func.func @started
// CHECK: %[[P:.*]] = whale.gather_params_start %{{.*}} from [1] over "replicas" : tensor<4x4xf32>
// CHECK: whale.gather_params_wait %[[P]] : tensor<4x4xf32>
func.func @started() -> tensor<4x4xf32> {
  %w = whale.param "m/w" zeros [] {group = "replicas", owner = 1 : i64} : tensor<4x4xf32>
  %p = whale.gather_params_start %w from [1] over "replicas" : tensor<4x4xf32>
  %g = whale.gather_params_wait %p : tensor<4x4xf32>
  return %g : tensor<4x4xf32>
}
