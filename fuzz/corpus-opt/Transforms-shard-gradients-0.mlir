// Three micro-batches over two replicas: the running sums of the bucket's
// gradients become one reduction per micro-batch, each as soon as its
// gradients are made: the first a reduce to owners, the others added into
// the owners' sums; the updates read the last sums.
// CHECK-LABEL: func.func @m_stage0
// CHECK: %[[A1:.*]] = whale.matmul_grad %arg0, %{{.*}}, %arg1 operand = 1
// CHECK-NEXT: %[[B1:.*]] = whale.reduce_sum %arg1
// CHECK-NEXT: %[[S1:.*]]:2 = whale.all_reduce %[[A1]], %[[B1]] over "replicas" {owners = array<i64: 0, 1>}
// CHECK-NEXT: %[[A2:.*]] = whale.matmul_grad %arg0, %{{.*}}, %arg2 operand = 1
// CHECK-NEXT: %[[B2:.*]] = whale.reduce_sum %arg2
// CHECK-NEXT: %[[R2:.*]]:2 = whale.all_reduce %[[A2]], %[[B2]] over "replicas" {owners = array<i64: 0, 1>}
// CHECK-NEXT: %[[S2:.*]]:2 = whale.add_into_owners %[[R2]]#0, %[[R2]]#1 into %[[S1]]#0, %[[S1]]#1 to [0, 1] over "replicas"
// CHECK: %[[R3:.*]]:2 = whale.all_reduce %{{.*}}, %{{.*}} over "replicas" {owners = array<i64: 0, 1>}
// CHECK-NEXT: %[[S3:.*]]:2 = whale.add_into_owners %[[R3]]#0, %[[R3]]#1 into %[[S2]]#0, %[[S2]]#1 to [0, 1] over "replicas"
// CHECK-NOT: whale.add
// CHECK: whale.sgd_update %{{.*}}, %[[S3]]#0
// CHECK-NEXT: whale.sgd_update %{{.*}}, %[[S3]]#1
// The addition into sums writes the sums in place and frees the
// gradients.
// LLVM-LABEL: llvm.func @m_stage0
// LLVM: llvm.call @whale_rt_reduce_to_owners(
// LLVM: llvm.call @whale_rt_reduce_to_owners(
// LLVM: llvm.call @whale_rt_add_into_owners(
// LLVM: llvm.call @whale_rt_reduce_to_owners(
// LLVM: llvm.call @whale_rt_add_into_owners(
// Overlapped, each micro-batch's reduction starts as soon as its
// gradients are made and is waited for, with its addition, only just
// before the next micro-batch makes its first gradient of the bucket (the
// last one's before the updates): it runs under the work between, and a
// rank never holds two micro-batches' gradients of the bucket.
// OVERLAP-LABEL: func.func @m_stage0
// OVERLAP: %[[B1:.*]] = whale.reduce_sum %arg1
// OVERLAP-NEXT: %[[P1:.*]] = whale.all_reduce_start %{{.*}}, %[[B1]] over "replicas" {owners = array<i64: 0, 1>}
// OVERLAP-NEXT: %[[S1:.*]]:2 = whale.all_reduce_wait %[[P1]]
// OVERLAP-NEXT: whale.matmul_grad %arg0, %{{.*}}, %arg2
// OVERLAP-NEXT: %[[B2:.*]] = whale.reduce_sum %arg2
// OVERLAP-NEXT: %[[P2:.*]] = whale.all_reduce_start %{{.*}}, %[[B2]] over "replicas" {owners = array<i64: 0, 1>}
// OVERLAP-NEXT: %[[R2:.*]]:2 = whale.all_reduce_wait %[[P2]]
// OVERLAP-NEXT: %[[S2:.*]]:2 = whale.add_into_owners %[[R2]]#0, %[[R2]]#1 into %[[S1]]#0, %[[S1]]#1
// OVERLAP-NEXT: whale.matmul_grad %arg0, %{{.*}}, %arg3
// OVERLAP-NEXT: %[[B3:.*]] = whale.reduce_sum %arg3
// OVERLAP-NEXT: %[[P3:.*]] = whale.all_reduce_start %{{.*}}, %[[B3]] over "replicas" {owners = array<i64: 0, 1>}
// OVERLAP-NEXT: %[[R3:.*]]:2 = whale.all_reduce_wait %[[P3]]
// OVERLAP-NEXT: %[[S3:.*]]:2 = whale.add_into_owners %[[R3]]#0, %[[R3]]#1 into %[[S2]]#0, %[[S2]]#1
// OVERLAP-NEXT: whale.sgd_update %{{.*}}, %[[S3]]#0
module attributes {whale.config = #whale.settings<shard_gradients = true, num_micro_batch = 3>} {
  func.func @m_stage0(%x: tensor<2x4xf32>, %d1: tensor<2x4xf32>, %d2: tensor<2x4xf32>, %d3: tensor<2x4xf32>) -> tensor<f32> attributes {whale.rank = {replicas = 2 : i64, stage = 0 : i64, micro_batches = 3 : i64}} {
    %w = whale.param "m/w" zeros [] : tensor<4x4xf32>
    %b = whale.param "m/b" zeros [] : tensor<4xf32>
    %a1 = whale.matmul_grad %x, %w, %d1 operand = 1 : tensor<2x4xf32>, tensor<4x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
    %b1 = whale.reduce_sum %d1 axes = [0] : tensor<2x4xf32> -> tensor<4xf32>
    %a2 = whale.matmul_grad %x, %w, %d2 operand = 1 : tensor<2x4xf32>, tensor<4x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
    %b2 = whale.reduce_sum %d2 axes = [0] : tensor<2x4xf32> -> tensor<4xf32>
    %sa2 = whale.add %a1, %a2 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    %sb2 = whale.add %b1, %b2 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %a3 = whale.matmul_grad %x, %w, %d3 operand = 1 : tensor<2x4xf32>, tensor<4x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
    %b3 = whale.reduce_sum %d3 axes = [0] : tensor<2x4xf32> -> tensor<4xf32>
    %sa3 = whale.add %sa2, %a3 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    %sb3 = whale.add %sb2, %b3 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %r:2 = whale.all_reduce %sa3, %sb3 over "replicas" {owners = array<i64: 0, 1>} : tensor<4x4xf32>, tensor<4xf32> -> tensor<4x4xf32>, tensor<4xf32>
    whale.sgd_update %w, %r#0 {group = "replicas", owner = 0 : i64, lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<4x4xf32>
    whale.sgd_update %b, %r#1 {group = "replicas", owner = 1 : i64, lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>
    %l = whale.constant 0.0 : tensor<f32>
    return %l : tensor<f32>
  }
}
