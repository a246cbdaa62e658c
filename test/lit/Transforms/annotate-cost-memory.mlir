// RUN: whale-opt %s --whale-annotate-cost | FileCheck %s

// What an op moves and holds, apart from its FLOPs.

// CHECK-LABEL: func.func @traffic
func.func @traffic(%t: tensor<1000x64xf32>, %ids: tensor<4x8xi32>, %x: tensor<8x16xf32>) {
  // A parameter reads nothing and holds its whole tensor.
  // CHECK: whale.param {{.*}}{whale.cost = {bytes_read = 0 : i64, bytes_written = 256000 : i64, flops = 0 : i64, memory = 256000 : i64}}
  %p = whale.param "p" zeros [] : tensor<1000x64xf32>
  // An embedding reads the 32 rows it gathers and the ids, not the table.
  // CHECK: whale.embedding {{.*}}{whale.cost = {bytes_read = 8320 : i64, bytes_written = 8192 : i64, flops = 0 : i64, memory = 8192 : i64}}
  %e = whale.embedding %t[%ids] : tensor<1000x64xf32>, tensor<4x8xi32> -> tensor<4x8x64xf32>
  // A reshape is a view: no traffic, no memory.
  // CHECK: whale.reshape {{.*}}{whale.cost = {bytes_read = 0 : i64, bytes_written = 0 : i64, flops = 0 : i64, memory = 0 : i64}}
  %r = whale.reshape %x : tensor<8x16xf32> -> tensor<128xf32>
  // A slice reads only the range it keeps.
  // CHECK: whale.slice {{.*}}{whale.cost = {bytes_read = 128 : i64, bytes_written = 128 : i64, flops = 0 : i64, memory = 128 : i64}}
  %s = whale.slice %x axis = 1, start = 0, end = 4 : tensor<8x16xf32> -> tensor<8x4xf32>
  // bf16 is two bytes an element.
  // CHECK: whale.param {{.*}}memory = 32 : i64
  %h = whale.param "h" zeros [] : tensor<16xbf16>
  return
}
