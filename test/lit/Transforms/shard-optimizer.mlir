// RUN: whale-opt %s --split-input-file --whale-shard-optimizer | FileCheck %s
// RUN: whale-opt %s --split-input-file --whale-shard-optimizer --whale-to-runtime | FileCheck %s --check-prefix=LLVM

// Four replicas: each parameter summed over them gets an owner, the one
// holding the fewest bytes so far (16x8 to 0, then 8 to 1, 8x4 to 2, 4 to
// 3); the update runs there, and one broadcast of the bucket's parameters
// from their owners follows the last of them. A parameter
// no all-reduce sums (here the frozen-like `m/own`, whose gradient is its
// rank's own) keeps its plain update. Only owned updates read the sums,
// so the all-reduce becomes a reduce to owners.
// CHECK-LABEL: func.func @m_stage0
// CHECK: whale.all_reduce {{.*}} over "replicas" {owners = array<i64: 0, 1, 2, 3>}
// CHECK: whale.adam_update %[[W0:.*]], %{{.*}} {{{.*}}group = "replicas"{{.*}}owner = 0 : i64{{.*}}} : tensor<16x8xf32>
// CHECK-NEXT: whale.adam_update %[[B0:.*]], %{{.*}} {{{.*}}owner = 1 : i64{{.*}}} : tensor<8xf32>
// CHECK-NEXT: whale.adam_update %[[W1:.*]], %{{.*}} {{{.*}}owner = 2 : i64{{.*}}} : tensor<8x4xf32>
// CHECK-NEXT: whale.adam_update %[[B1:.*]], %{{.*}} {{{.*}}owner = 3 : i64{{.*}}} : tensor<4xf32>
// CHECK-NEXT: whale.broadcast %[[W0]], %[[B0]], %[[W1]], %[[B1]] from [0, 1, 2, 3] over "replicas" : tensor<16x8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<4xf32>
// CHECK-NEXT: whale.adam_update %{{.*}}, %{{.*}} {beta1{{[^}]*}}} : tensor<2xf32>
// CHECK-NOT: whale.broadcast
// The update is taken where whale_rt_owns says so; the broadcast always.
// LLVM-LABEL: llvm.func @m_stage0
// LLVM: llvm.call @whale_rt_reduce_to_owners(
// LLVM: llvm.call @whale_rt_owns
// LLVM: llvm.cond_br %{{.*}}, ^[[MINE:bb[0-9]+]], ^[[NEXT:bb[0-9]+]]{{$}}
// LLVM: ^[[MINE]]:
// LLVM: llvm.call @whale_rt_adam_step
// LLVM: ^[[NEXT]]:
// LLVM: llvm.call @whale_rt_broadcast_from_owners(
module attributes {whale.config = #whale.settings<shard_optimizer = true>} {
  func.func @m_stage0(%g0: tensor<16x8xf32>, %g1: tensor<8xf32>, %g2: tensor<8x4xf32>, %g3: tensor<4xf32>, %g4: tensor<2xf32>) -> tensor<f32> attributes {whale.rank = {replicas = 4 : i64, stage = 0 : i64}} {
    %w0 = whale.param "m/w0" zeros [] : tensor<16x8xf32>
    %b0 = whale.param "m/b0" zeros [] : tensor<8xf32>
    %w1 = whale.param "m/w1" zeros [] : tensor<8x4xf32>
    %b1 = whale.param "m/b1" zeros [] : tensor<4xf32>
    %own = whale.param "m/own" zeros [] : tensor<2xf32>
    %r:4 = whale.all_reduce %g0, %g1, %g2, %g3 over "replicas" : tensor<16x8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<4xf32> -> tensor<16x8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<4xf32>
    whale.adam_update %w0, %r#0 {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<16x8xf32>
    whale.adam_update %b0, %r#1 {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<8xf32>
    whale.adam_update %w1, %r#2 {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<8x4xf32>
    whale.adam_update %b1, %r#3 {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>
    whale.adam_update %own, %g4 {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<2xf32>
    %l = whale.constant 0.0 : tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Shard peers: 4 replicas in shard groups of 2, so groups of 2 peers;
// through clipping, which scales the sums in place and counts them as
// parts of split parameters: their owners are among the shard peers, and
// the clipping counts each on its owner.
// CHECK-LABEL: func.func @m_stage0
// CHECK: whale.all_reduce {{.*}} over "shard_peers" {owners = array<i64: 0, 1>, shards = 2 : i64} :
// CHECK: whale.clip_grad_norm {{.*}} max_norm = 1.000000e+00 {owners = array<i64: 0, 1>, sharded = array<i1: true, true>, shards = 2 : i64} :
// CHECK: whale.sgd_update %[[W:.*]], %{{.*}} {group = "shard_peers", lr{{.*}}owner = 0 : i64, shards = 2 : i64{{.*}}}
// CHECK-NEXT: whale.sgd_update %[[V:.*]], %{{.*}} {{{.*}}owner = 1 : i64
// CHECK-NEXT: whale.broadcast %[[W]], %[[V]] from [0, 1] over "shard_peers" {shards = 2 : i64}
module attributes {whale.config = #whale.settings<shard_optimizer = true>} {
  func.func @m_stage0(%g0: tensor<4x4xf32>, %g1: tensor<4xf32>) -> tensor<f32> attributes {whale.rank = {replicas = 4 : i64, stage = 0 : i64}} {
    %w = whale.param "m/w" zeros [] : tensor<4x4xf32>
    %v = whale.param "m/v" zeros [] : tensor<4xf32>
    %r:2 = whale.all_reduce %g0, %g1 over "shard_peers" {shards = 2 : i64} : tensor<4x4xf32>, tensor<4xf32> -> tensor<4x4xf32>, tensor<4xf32>
    %c:2 = whale.clip_grad_norm %r#0, %r#1 max_norm = 1.0 {shards = 2 : i64, sharded = array<i1: true, true>} : tensor<4x4xf32>, tensor<4xf32> -> tensor<4x4xf32>, tensor<4xf32>
    whale.sgd_update %w, %c#0 {lr = 0.1 : f64, momentum = 0.9 : f64, weight_decay = 0.0 : f64} : tensor<4x4xf32>
    whale.sgd_update %v, %c#1 {lr = 0.1 : f64, momentum = 0.9 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>
    %l = whale.constant 0.0 : tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Clipping over the stages of a pipeline: the bucket the updates alone
// read is reduced to its owners, and the clipping counts those gradients
// on their owners (a gradient no all-reduce sums is -1: every replica holds
// it). A bucket whose sum something else reads too stays an all-reduce.
// CHECK-LABEL: func.func @m_stage0
// CHECK: whale.all_reduce %{{.*}}, %{{.*}} over "replicas" {owners = array<i64: 0, 1>}
// CHECK: whale.all_reduce %{{.*}}, %{{.*}} over "replicas" :
// CHECK: whale.clip_grad_norm {{.*}} over "stages" {owners = array<i64: 0, 1, -1>}
// CHECK: whale.sgd_update %[[W:[0-9]+]], {{.*}}owner = 0
// CHECK-NEXT: whale.sgd_update %[[V:[0-9]+]], {{.*}}owner = 1
// CHECK-NEXT: whale.broadcast %[[W]], %[[V]] from [0, 1] over "replicas"
// CHECK-NEXT: whale.sgd_update %[[U:[0-9]+]], {{.*}}owner = 1
// CHECK-NEXT: whale.broadcast %[[U]] from [1] over "replicas"
// LLVM-LABEL: llvm.func @m_stage0
// LLVM: llvm.call @whale_rt_reduce_to_owners(
// LLVM: llvm.call @whale_rt_all_reduce(
// LLVM: llvm.call @whale_rt_clip_grad_norm_owned(
module attributes {whale.config = #whale.settings<shard_optimizer = true>} {
  func.func @m_stage0(%g0: tensor<4x4xf32>, %g1: tensor<4xf32>, %g2: tensor<4xf32>, %g3: tensor<4xf32>, %g4: tensor<2xf32>) -> tensor<4xf32> attributes {whale.rank = {replicas = 2 : i64, stage = 0 : i64}} {
    %w = whale.param "m/w" zeros [] : tensor<4x4xf32>
    %v = whale.param "m/v" zeros [] : tensor<4xf32>
    %u = whale.param "m/u" zeros [] : tensor<4xf32>
    %r:2 = whale.all_reduce %g0, %g1 over "replicas" : tensor<4x4xf32>, tensor<4xf32> -> tensor<4x4xf32>, tensor<4xf32>
    %s:2 = whale.all_reduce %g2, %g3 over "replicas" : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>, tensor<4xf32>
    %c:3 = whale.clip_grad_norm %r#0, %r#1, %g4 max_norm = 1.0 over "stages" : tensor<4x4xf32>, tensor<4xf32>, tensor<2xf32> -> tensor<4x4xf32>, tensor<4xf32>, tensor<2xf32>
    whale.sgd_update %w, %c#0 {lr = 0.1 : f64, momentum = 0.9 : f64, weight_decay = 0.0 : f64} : tensor<4x4xf32>
    whale.sgd_update %v, %c#1 {lr = 0.1 : f64, momentum = 0.9 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>
    whale.sgd_update %u, %s#0 {lr = 0.1 : f64, momentum = 0.9 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>
    return %s#1 : tensor<4xf32>
  }
}

// -----

// A clipping that counts a shard peers' sum as a whole gradient (no
// `sharded` flag) would count an owned part wrongly: the sums stay
// all-reduced.
// CHECK-LABEL: func.func @m_stage0
// CHECK: whale.all_reduce {{.*}} over "shard_peers" {shards = 2 : i64} :
// CHECK: whale.clip_grad_norm {{.*}} max_norm = 1.000000e+00 :
module attributes {whale.config = #whale.settings<shard_optimizer = true>} {
  func.func @m_stage0(%g0: tensor<4xf32>) -> tensor<f32> attributes {whale.rank = {replicas = 4 : i64, stage = 0 : i64}} {
    %w = whale.param "m/w" zeros [] : tensor<4xf32>
    %r = whale.all_reduce %g0 over "shard_peers" {shards = 2 : i64} : tensor<4xf32> -> tensor<4xf32>
    %c = whale.clip_grad_norm %r max_norm = 1.0 : tensor<4xf32> -> tensor<4xf32>
    whale.sgd_update %w, %c {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>
    %l = whale.constant 0.0 : tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// Without the setting, nothing changes.
// CHECK-LABEL: func.func @m_stage0
// CHECK-NOT: owner
// CHECK-NOT: whale.broadcast
func.func @m_stage0(%g0: tensor<4xf32>) -> tensor<f32> attributes {whale.rank = {replicas = 2 : i64, stage = 0 : i64}} {
  %w = whale.param "m/w" zeros [] : tensor<4xf32>
  %r = whale.all_reduce %g0 over "replicas" : tensor<4xf32> -> tensor<4xf32>
  whale.sgd_update %w, %r {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>
  %l = whale.constant 0.0 : tensor<f32>
  return %l : tensor<f32>
}

// -----

// Hybrid sharding (shard_group = 2 of 4 replicas): owners are positions in
// a sharding group of 2, dealt out by bytes there (16x8 to 0, the rest to
// 1); the reduce to owners, the broadcast and the owned updates are over
// "hsdp", and the clipping counts owned squares in the sharding group. The
// runtime's group is WHALE_RT_GROUP_SHARDING(REPLICAS, 2) = 512; the
// clipping is told the sharding group's replicas (2).
// CHECK-LABEL: func.func @h_stage0
// CHECK: whale.all_reduce {{.*}} over "hsdp" {owners = array<i64: 0, 1, 1, 1>}
// CHECK: whale.clip_grad_norm {{.*}} {owners = array<i64: 0, 1, 1, 1>}
// CHECK: whale.adam_update {{.*}}group = "hsdp"{{.*}}owner = 0 : i64
// CHECK-COUNT-3: whale.adam_update {{.*}}group = "hsdp"{{.*}}owner = 1 : i64
// CHECK-NEXT: whale.broadcast {{.*}} from [0, 1, 1, 1] over "hsdp"
// LLVM-LABEL: llvm.func @h_stage0
// LLVM: %[[G:.*]] = llvm.mlir.constant(512 : i32)
// LLVM: llvm.call @whale_rt_reduce_to_owners(%{{.*}}, %[[G]],
// LLVM: %[[S:.*]] = llvm.mlir.constant(2 : i32)
// LLVM: llvm.call @whale_rt_clip_grad_norm_owned(%{{.*}}, %{{.*}}, %{{.*}}, %[[S]],
// LLVM: llvm.call @whale_rt_broadcast_from_owners(%{{.*}}, %{{.*}},
module attributes {whale.config = #whale.settings<shard_optimizer = true, shard_group = 2>} {
  func.func @h_stage0(%g0: tensor<16x8xf32>, %g1: tensor<8xf32>, %g2: tensor<8x4xf32>, %g3: tensor<4xf32>) -> tensor<f32> attributes {whale.rank = {replicas = 4 : i64, stage = 0 : i64}} {
    %w0 = whale.param "m/w0" zeros [] : tensor<16x8xf32>
    %b0 = whale.param "m/b0" zeros [] : tensor<8xf32>
    %w1 = whale.param "m/w1" zeros [] : tensor<8x4xf32>
    %b1 = whale.param "m/b1" zeros [] : tensor<4xf32>
    %r:4 = whale.all_reduce %g0, %g1, %g2, %g3 over "replicas" : tensor<16x8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<4xf32> -> tensor<16x8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<4xf32>
    %c:4 = whale.clip_grad_norm %r#0, %r#1, %r#2, %r#3 max_norm = 1.0 : tensor<16x8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<4xf32> -> tensor<16x8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<4xf32>
    whale.adam_update %w0, %c#0 {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<16x8xf32>
    whale.adam_update %b0, %c#1 {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<8xf32>
    whale.adam_update %w1, %c#2 {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<8x4xf32>
    whale.adam_update %b1, %c#3 {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>
    %l = whale.constant 0.0 : tensor<f32>
    return %l : tensor<f32>
  }
}
