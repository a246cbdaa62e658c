// RUN: whale-opt %s --split-input-file --whale-virtual-devices=devices=4 --whale-pipeline=global-batch=32 --whale-sharding | FileCheck %s

// Megatron's pair: the first layer splits its weight's columns (its input
// gathered from the ranks' rows, read whole by the parts: fanout), the
// second its rows; the mean of the partial sums is partial too, so one
// shard_sum of a scalar adds them. The input needs no gradient: no fanout.
// CHECK-LABEL: func.func @mlp
// CHECK: whale.param "w1" {{.*}}{shard = array<i64: 1, 4>} : tensor<16x8xf32>
// CHECK: %[[X:.*]] = whale.all_gather %arg0 axis 0 shards 4 : tensor<8x16xf32> -> tensor<32x16xf32>
// CHECK-NOT: whale.fanout
// CHECK: whale.matmul %[[X]], {{.*}} -> tensor<32x8xf32>
// CHECK: whale.param "w2" {{.*}}{shard = array<i64: 0, 4>} : tensor<8x16xf32>
// CHECK: %[[P:.*]] = whale.matmul {{.*}} -> tensor<32x16xf32>
// CHECK: %[[M:.*]] = whale.reduce_mean %[[P]] axes = [0, 1] : tensor<32x16xf32> -> tensor<f32>
// CHECK: whale.shard_sum %[[M]] shards 4 : tensor<f32>
func.func @mlp(%x: tensor<8x16xf32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph split -> (tensor<f32>) {
    %w1 = whale.param "w1" normal [0.0, 2.0e-02] : tensor<16x32xf32>
    %h = whale.matmul %x, %w1 : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    %r = whale.relu %h : tensor<8x32xf32>
    %w2 = whale.param "w2" normal [0.0, 2.0e-02] : tensor<32x16xf32>
    %y = whale.matmul %r, %w2 : tensor<8x32xf32>, tensor<32x16xf32> -> tensor<8x16xf32>
    %m = whale.reduce_mean %y axes = [0, 1] : tensor<8x16xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// The paper's hybrid: replicated features, then a wide head split by
// columns; the cross entropy runs on each rank's classes (sharded), so
// the logits are never gathered. The bridge gathers the features' rows.
// CHECK-LABEL: func.func @hybrid
// CHECK: whale.taskgraph split
// CHECK-SAME: bridges = ["all_gather part(0) -> whole 512 B", "all_gather part(0) -> whole 32 B"]
// CHECK-SAME: sharding = [{costs = {column = 512 : i64, row = 512128 : i64, rows = 256000 : i64}, {{.*}}pattern = "column"
// CHECK-SAME: {costs = {sharded_classes = 32 : i64, whole = 128032 : i64}, {{.*}}pattern = "sharded_classes"
// CHECK: whale.sharded_cross_entropy {{.*}} shards 4 : tensor<32x1000xf32>, tensor<32xi32> -> tensor<32xf32>
// CHECK-NOT: whale.all_gather
func.func @hybrid(%x: tensor<8x16xf32>, %y: tensor<8xi32>) -> tensor<f32> attributes {whale.model} {
  %h = whale.taskgraph replicate -> (tensor<8x16xf32>) {
    %a = whale.relu %x : tensor<8x16xf32>
    whale.yield %a : tensor<8x16xf32>
  }
  %l = whale.taskgraph split -> (tensor<f32>) {
    %w = whale.param "head" normal [0.0, 2.0e-02] : tensor<16x4000xf32>
    %z = whale.matmul %h, %w : tensor<8x16xf32>, tensor<16x4000xf32> -> tensor<8x4000xf32>
    %c = whale.cross_entropy %z, %y : tensor<8x4000xf32>, tensor<8xi32> -> tensor<8xf32>
    %m = whale.reduce_mean %c axes = [0] : tensor<8xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// split -> replicate: the column-split output goes back to the ranks' rows
// for the replicated reader: one all-to-all hands each rank its rows of
// every rank's columns (a quarter of what gathering the columns moved).
// CHECK-LABEL: func.func @split_to_replicate
// CHECK: whale.taskgraph split
// CHECK-SAME: bridges = ["all_gather part(0) -> whole 512 B", "all_to_all part(1) -> part(0) 1024 B"]
// CHECK: %[[S:.*]] = whale.all_to_all %{{.*}} split 0 concat 1 shards 4 : tensor<32x8xf32> -> tensor<8x32xf32>
// CHECK: whale.yield %[[S]] : tensor<8x32xf32>
// CHECK: whale.taskgraph replicate
// CHECK-NOT: whale.all_gather
// CHECK: whale.reduce_mean
func.func @split_to_replicate(%x: tensor<8x16xf32>) -> tensor<f32> attributes {whale.model} {
  %h = whale.taskgraph split -> (tensor<8x32xf32>) {
    %w = whale.param "w" normal [0.0, 2.0e-02] : tensor<16x32xf32>
    %z = whale.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    whale.yield %z : tensor<8x32xf32>
  }
  %l = whale.taskgraph replicate -> (tensor<f32>) {
    %m = whale.reduce_mean %h axes = [0, 1] : tensor<8x32xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// split -> split: the next TaskGraph reads the columns where they are (an
// extra result of the first), with no gather in between: the gather a
// bridge to the ranks' rows would make, and the partition after it, fuse
// away.
// CHECK-LABEL: func.func @split_to_split
// CHECK: %[[T:.*]]:2 = whale.taskgraph split -> (tensor<32x8xf32>, tensor<32x8xf32>)
// CHECK-SAME: bridges = ["all_gather part(0) -> whole 512 B"]
// CHECK: %[[Z:.*]] = whale.matmul
// CHECK-NEXT: whale.yield %[[Z]], %[[Z]]
// CHECK: whale.taskgraph split
// CHECK-NOT: whale.all_gather
// CHECK: whale.relu %[[T]]#1 : tensor<32x8xf32>
func.func @split_to_split(%x: tensor<8x16xf32>) -> tensor<f32> attributes {whale.model} {
  %h = whale.taskgraph split -> (tensor<8x32xf32>) {
    %w = whale.param "w" normal [0.0, 2.0e-02] : tensor<16x32xf32>
    %z = whale.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    whale.yield %z : tensor<8x32xf32>
  }
  %l = whale.taskgraph split -> (tensor<f32>) {
    %r = whale.relu %h : tensor<8x32xf32>
    %w2 = whale.param "w2" normal [0.0, 2.0e-02] : tensor<32x16xf32>
    %y = whale.matmul %r, %w2 : tensor<8x32xf32>, tensor<32x16xf32> -> tensor<8x16xf32>
    %m = whale.reduce_mean %y axes = [0, 1] : tensor<8x16xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// A forced pattern: every matmul with a weight splits its rows.
// RUN: whale-opt %s --split-input-file --whale-virtual-devices=devices=2 --whale-pipeline=global-batch=16 --whale-sharding=matmul=row 2>&1 | FileCheck %s --check-prefix=ROW
// ROW-LABEL: func.func @mlp
// ROW: whale.param "w1" {{.*}}{shard = array<i64: 0, 2>} : tensor<8x32xf32>
// ROW: whale.param "w2" {{.*}}{shard = array<i64: 0, 2>} : tensor<16x16xf32>
// ROW-NOT: pattern = "column"

// RUN: not whale-opt %s --split-input-file --whale-virtual-devices=devices=2 --whale-pipeline=global-batch=16 --whale-sharding=matmul=diagonal 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: -whale-sharding: matmul must be auto, column, row or replicated, not 'diagonal'

// -----

// A softmax over the last axis written as -1 is a softmax over the columns:
// a column-split input is gathered first, never normalized per rank.
// RUN: whale-opt %s --split-input-file --whale-virtual-devices=devices=2 --whale-pipeline=global-batch=8 --whale-sharding=matmul=column 2>&1 | FileCheck %s --check-prefix=SOFTMAX
// SOFTMAX-LABEL: func.func @softmax_last_axis
// SOFTMAX: whale.matmul %{{.*}}, %{{.*}} : tensor<16x16xf32>, tensor<16x32xf32> -> tensor<16x32xf32>
// SOFTMAX-NEXT: whale.all_gather %{{.*}} axis 1 shards 2 : tensor<16x32xf32> -> tensor<16x64xf32>
// SOFTMAX-NEXT: whale.softmax %{{.*}} axis = -1 : tensor<16x64xf32>
func.func @softmax_last_axis(%x: tensor<8x16xf32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph split -> (tensor<f32>) {
    %w = whale.param "w" normal [0.0, 0.02] : tensor<16x64xf32>
    %y = whale.matmul %x, %w : tensor<8x16xf32>, tensor<16x64xf32> -> tensor<8x64xf32>
    %p = whale.softmax %y axis = -1 : tensor<8x64xf32>
    %m = whale.reduce_mean %p axes = [0, 1] : tensor<8x64xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// An op defined by its formula takes its sharding rule from its ODS class
// (ShardingOpInterface): silu after a column-split product runs on the
// ranks' columns, so Llama's gate stays split until the row-split product.
// CHECK-LABEL: func.func @swiglu_gate
// CHECK: %[[H:.*]] = whale.matmul {{.*}} -> tensor<32x8xf32>
// CHECK: %[[G:.*]] = whale.silu %[[H]] : tensor<32x8xf32>
// CHECK-NOT: whale.all_gather %[[G]]
// CHECK: whale.matmul %[[G]], {{.*}} -> tensor<32x16xf32>
func.func @swiglu_gate(%x: tensor<8x16xf32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph split -> (tensor<f32>) {
    %w1 = whale.param "w1" normal [0.0, 2.0e-02] : tensor<16x32xf32>
    %h = whale.matmul %x, %w1 : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    %g = whale.silu %h : tensor<8x32xf32>
    %w2 = whale.param "w2" normal [0.0, 2.0e-02] : tensor<32x16xf32>
    %y = whale.matmul %g, %w2 : tensor<8x32xf32>, tensor<32x16xf32> -> tensor<8x16xf32>
    %m = whale.reduce_mean %y axes = [0, 1] : tensor<8x16xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// RMSNorm normalizes each row whole (its ShardingOpInterface rule): after a
// column-split product the columns are gathered first, and the weight is
// whole on every rank.
// CHECK-LABEL: func.func @rms_norm_after_columns
// CHECK: %[[H:.*]] = whale.matmul {{.*}} -> tensor<32x8xf32>
// CHECK: %[[W:.*]] = whale.all_gather %[[H]] axis 1 shards 4 : tensor<32x8xf32> -> tensor<32x32xf32>
// CHECK: %[[G:.*]] = whale.param "g" ones [] : tensor<32xf32>
// CHECK: whale.rms_norm %[[W]], %[[G]] eps = 1.000000e-05 : tensor<32x32xf32>, tensor<32xf32>
func.func @rms_norm_after_columns(%x: tensor<8x16xf32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph split -> (tensor<f32>) {
    %w1 = whale.param "w1" normal [0.0, 2.0e-02] : tensor<16x32xf32>
    %h = whale.matmul %x, %w1 : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    %g = whale.param "g" ones [] : tensor<32xf32>
    %n = whale.rms_norm %h, %g eps = 1.0e-5 : tensor<8x32xf32>, tensor<32xf32>
    %m = whale.reduce_mean %n axes = [0, 1] : tensor<8x32xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
