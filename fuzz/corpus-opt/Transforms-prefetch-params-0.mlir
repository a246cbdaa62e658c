// Three gathers: each starts where the one before it stood (before that
// one's wait), so it travels while the layer before computes, and waits
// where it stood; the first starts in place.
// CHECK-LABEL: func.func @m_stage0
// CHECK: %[[S0:.*]] = whale.gather_params_start %[[W0:.*]] from [0] over "replicas" : tensor<4x4xf32>
// CHECK-NEXT: %[[S1:.*]] = whale.gather_params_start %[[W1:.*]] from [1] over "replicas" : tensor<4x4xf32>
// CHECK-NEXT: %[[G0:.*]] = whale.gather_params_wait %[[S0]] : tensor<4x4xf32>
// CHECK-NEXT: %[[Y0:.*]] = whale.matmul %{{.*}}, %[[G0]]
// CHECK-NEXT: %[[S2:.*]] = whale.gather_params_start %[[W0]] from [0] over "replicas" : tensor<4x4xf32>
// CHECK-NEXT: %[[G1:.*]] = whale.gather_params_wait %[[S1]] : tensor<4x4xf32>
// CHECK-NEXT: %[[Y1:.*]] = whale.matmul %[[Y0]], %[[G1]]
// CHECK-NEXT: %[[G2:.*]] = whale.gather_params_wait %[[S2]] : tensor<4x4xf32>
// CHECK-NEXT: whale.matmul %[[Y1]], %[[G2]]
// CHECK-NOT: whale.gather_params %
// The start packs and queues; the wait makes the tensors and unpacks.
// LLVM-LABEL: llvm.func @m_stage0
// LLVM: llvm.call @whale_rt_gather_params_start(
// LLVM: llvm.call @whale_rt_gather_params_start(
// LLVM: llvm.call @whale_rt_tensor_create(
// LLVM: llvm.call @whale_rt_gather_params_wait(
module attributes {whale.config = #whale.settings<shard_parameters = true>} {
  func.func @m_stage0(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {whale.rank = {replicas = 2 : i64, stage = 0 : i64}} {
    %w0 = whale.param "m/l0/w" zeros [] {group = "replicas", owner = 0 : i64} : tensor<4x4xf32>
    %w1 = whale.param "m/l1/w" zeros [] {group = "replicas", owner = 1 : i64} : tensor<4x4xf32>
    %g0 = whale.gather_params %w0 from [0] over "replicas" : tensor<4x4xf32>
    %y0 = whale.matmul %x, %g0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %g1 = whale.gather_params %w1 from [1] over "replicas" : tensor<4x4xf32>
    %y1 = whale.matmul %y0, %g1 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %g2 = whale.gather_params %w0 from [0] over "replicas" : tensor<4x4xf32>
    %y2 = whale.matmul %y1, %g2 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    return %y2 : tensor<2x4xf32>
  }
}
