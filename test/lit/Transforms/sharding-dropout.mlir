// RUN: whale-opt %s --split-input-file --whale-virtual-devices=devices=4 --whale-pipeline=global-batch=32 --whale-sharding | FileCheck %s

// A dropout draws by global rows, so under split it runs on the rank's own
// rows: the column-split product comes back to them by one all-to-all.
// CHECK-LABEL: func.func @drop
// CHECK: whale.taskgraph split
// CHECK-SAME: pattern = "rows", result = "part(0)"
// CHECK: %[[Z:.*]] = whale.matmul {{.*}} -> tensor<32x8xf32>
// CHECK: %[[R:.*]] = whale.all_to_all %[[Z]] split 0 concat 1 shards 4 : tensor<32x8xf32> -> tensor<8x32xf32>
// CHECK: whale.dropout %[[R]] rate = 1.000000e-01 key = 5 : tensor<8x32xf32>
func.func @drop(%x: tensor<8x16xf32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph split -> (tensor<f32>) {
    %w = whale.param "w" normal [0.0, 2.0e-02] : tensor<16x32xf32>
    %z = whale.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    %d = whale.dropout %z rate = 0.1 key = 5 : tensor<8x32xf32>
    %m = whale.reduce_mean %d axes = [0, 1] : tensor<8x32xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
