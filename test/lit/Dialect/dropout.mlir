// RUN: whale-opt %s | whale-opt | FileCheck %s
// RUN: whale-opt %s --mlir-print-op-generic | whale-opt | FileCheck %s
// RUN: whale-opt %s --whale-annotate-cost | FileCheck %s --check-prefix=COST

// CHECK-LABEL: func.func @dropout
// COST: whale.dropout {{.*}}whale.cost = {bytes_read = 512 : i64, bytes_written = 512 : i64, flops = 256 : i64
// CHECK: whale.dropout %{{.*}} rate = 1.000000e-01 key = 42 : tensor<8x16xf32>
// CHECK: whale.dropout %{{.*}} rate = 5.000000e-01 key = -7 {row_offset = 8 : i64} : tensor<8x4x4xf32>
func.func @dropout(%x: tensor<8x16xf32>, %y: tensor<8x4x4xf32>) -> (tensor<8x16xf32>, tensor<8x4x4xf32>) {
  %a = whale.dropout %x rate = 0.1 key = 42 : tensor<8x16xf32>
  %b = whale.dropout %y rate = 0.5 key = -7 {row_offset = 8} : tensor<8x4x4xf32>
  return %a, %b : tensor<8x16xf32>, tensor<8x4x4xf32>
}
