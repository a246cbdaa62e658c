// RUN: whale-opt %s --split-input-file --whale-virtual-devices=devices=4 --whale-pipeline --whale-data-parallel --whale-sharding --whale-rank-programs | FileCheck %s

// split_rows = "whole": the two ranks of each shard group read the same 16
// rows (two groups share the batch of 32), as Megatron-LM lays out tensor
// parallelism. Nothing is gathered on the way in: the replicated features
// are whole, read by the head's column parts through a fanout (whose
// gradient is the group's shard_sum). Every gradient, the replicated
// features' too, is summed over the ranks at the same place in the other
// group (shard_peers), never within a group, which computed it once. The
// loss is each rank's rows' own mean (backward starts at grad_weight, no
// group share), and each rank returns half of it, so the ranks' losses add
// up to the global one.
// CHECK-LABEL: func.func @hybrid_stage0
// CHECK-SAME: micro_batch = 16 : i64
// CHECK-SAME: row_group = 2 : i64
// CHECK-NOT: loss_shards
// CHECK: %[[F:.*]] = whale.param "features" {{.*}}: tensor<16x16xf32>
// CHECK: %[[H:.*]] = whale.param "head" {{.*}}{shard = array<i64: 1, 2>} : tensor<16x32xf32>
// CHECK-NOT: whale.all_gather
// CHECK: whale.fanout %{{.*}} shards 2 : tensor<16x16xf32>
// CHECK: %[[W:.*]] = whale.constant 5.000000e-01 : tensor<f32>
// CHECK: whale.reduce_grad mean %{{.*}}, %[[W]]
// CHECK: whale.shard_sum %{{.*}} shards 2 : tensor<16x16xf32>
// CHECK: %[[G:.*]]:2 = whale.all_reduce %{{.*}}, %{{.*}} over "shard_peers" {shards = 2 : i64} : tensor<16x32xf32>, tensor<16x16xf32>
// CHECK: whale.sgd_update %[[F]], %[[G]]#1
// CHECK: whale.sgd_update %[[H]], %[[G]]#0
// CHECK: %[[HALF:.*]] = whale.constant 2.500000e-01 : tensor<f32>
// CHECK: %[[L:.*]] = whale.mul %{{.*}}, %[[HALF]]
// CHECK: return %[[L]]
module attributes {whale.config = #whale.settings<split_rows = "whole">} {
func.func @hybrid(%x: tensor<16x16xf32>, %y: tensor<16xi32>) -> tensor<f32> attributes {whale.model, whale.train = {data = {batch = 32 : i64, kind = "synthetic", seed = 1 : i64}, optimizer = {kind = "sgd", lr = 1.000000e-01 : f64, momentum = 0.000000e+00 : f64, weight_decay = 0.000000e+00 : f64}, steps = 2 : i64}} {
  %h = whale.taskgraph replicate -> (tensor<16x16xf32>) {
    %w0 = whale.param "features" normal [0.0, 2.0e-02] : tensor<16x16xf32>
    %f = whale.matmul %x, %w0 : tensor<16x16xf32>, tensor<16x16xf32> -> tensor<16x16xf32>
    %a = whale.relu %f : tensor<16x16xf32>
    whale.yield %a : tensor<16x16xf32>
  }
  %l = whale.taskgraph split(2) -> (tensor<f32>) {
    %w = whale.param "head" normal [0.0, 2.0e-02] : tensor<16x64xf32>
    %z = whale.matmul %h, %w : tensor<16x16xf32>, tensor<16x64xf32> -> tensor<16x64xf32>
    %c = whale.cross_entropy %z, %y : tensor<16x64xf32>, tensor<16xi32> -> tensor<16xf32>
    %m = whale.reduce_mean %c axes = [0] : tensor<16xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
}

// -----

// A pipeline of two split stages whose groups line up (rank i of a group
// hands on to rank i of the next): the first stage's column parts pass to
// the second as they are, which reads them as the row split's parts. No
// gather on either side of the boundary; one shard_sum of the logits.
// CHECK-LABEL: func.func @pipe_stage0
// CHECK-NOT: whale.all_gather
// CHECK: whale.send %{{.*}} to stage 1 tag 0 : tensor<8x16xf32>
// CHECK: whale.recv from stage 1 tag 4096 : tensor<8x16xf32>
// CHECK-LABEL: func.func @pipe_stage1
// CHECK-NOT: whale.all_gather
// CHECK: %[[P:.*]] = whale.recv from stage 0 tag 0 : tensor<8x16xf32>
// CHECK: %[[Z:.*]] = whale.matmul %[[P]], %{{.*}} : tensor<8x16xf32>, tensor<16x10xf32> -> tensor<8x10xf32>
// CHECK: whale.shard_sum %[[Z]] shards 2 : tensor<8x10xf32>
// CHECK: whale.send %{{.*}} to stage 0 tag 4096 : tensor<8x16xf32>
module attributes {whale.config = #whale.settings<split_rows = "whole", num_micro_batch = 2>} {
func.func @pipe(%x: tensor<8x16xf32>, %y: tensor<8xi32>) -> tensor<f32> attributes {whale.model, whale.train = {data = {batch = 16 : i64, kind = "synthetic", seed = 1 : i64}, optimizer = {kind = "sgd", lr = 1.000000e-01 : f64, momentum = 0.000000e+00 : f64, weight_decay = 0.000000e+00 : f64}, steps = 2 : i64}} {
  %h = whale.taskgraph split(2) -> (tensor<8x32xf32>) {
    %w1 = whale.param "w1" normal [0.0, 2.0e-02] : tensor<16x32xf32>
    %a = whale.matmul %x, %w1 : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    %r = whale.relu %a : tensor<8x32xf32>
    whale.yield %r : tensor<8x32xf32>
  }
  %l = whale.taskgraph split(2) -> (tensor<f32>) {
    %w2 = whale.param "w2" normal [0.0, 2.0e-02] : tensor<32x10xf32>
    %z = whale.matmul %h, %w2 : tensor<8x32xf32>, tensor<32x10xf32> -> tensor<8x10xf32>
    %c = whale.cross_entropy %z, %y : tensor<8x10xf32>, tensor<8xi32> -> tensor<8xf32>
    %m = whale.reduce_mean %c axes = [0] : tensor<8xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
}

// -----

// Three parts of one earlier stage read by one later op: exporting each
// rebuilds the TaskGraph they come from, so every operand is read after
// all are exported (once this read a result of a TaskGraph gone).
// CHECK-LABEL: func.func @three_stage1
// CHECK-NOT: whale.all_gather
// CHECK: %[[Q:.*]] = whale.recv from stage 0 tag 0 : tensor<8x16xf32>
// CHECK: %[[K:.*]] = whale.recv from stage 0 tag 1 : tensor<8x16xf32>
// CHECK: %[[V:.*]] = whale.recv from stage 0 tag 2 : tensor<8x16xf32>
// CHECK: %[[S:.*]] = whale.add %[[Q]], %[[K]] : tensor<8x16xf32>
// CHECK: whale.mul %[[S]], %[[V]] : tensor<8x16xf32>
module attributes {whale.config = #whale.settings<split_rows = "whole", num_micro_batch = 2>} {
func.func @three(%x: tensor<8x16xf32>) -> tensor<f32> attributes {whale.model, whale.train = {data = {batch = 16 : i64, kind = "synthetic", seed = 1 : i64}, optimizer = {kind = "sgd", lr = 1.000000e-01 : f64, momentum = 0.000000e+00 : f64, weight_decay = 0.000000e+00 : f64}, steps = 2 : i64}} {
  %q, %k, %v = whale.taskgraph split(2) -> (tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>) {
    %wq = whale.param "wq" normal [0.0, 2.0e-02] : tensor<16x32xf32>
    %wk = whale.param "wk" normal [0.0, 2.0e-02] : tensor<16x32xf32>
    %wv = whale.param "wv" normal [0.0, 2.0e-02] : tensor<16x32xf32>
    %a = whale.matmul %x, %wq : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    %b = whale.matmul %x, %wk : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    %c = whale.matmul %x, %wv : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    whale.yield %a, %b, %c : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>
  }
  %l = whale.taskgraph split(2) -> (tensor<f32>) {
    %s = whale.add %q, %k : tensor<8x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
    %p = whale.mul %s, %v : tensor<8x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
    %m = whale.reduce_mean %p axes = [0, 1] : tensor<8x32xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
}
