// RUN: whale-opt %s -split-input-file -whale-share-casts | FileCheck %s

// A weight converted again by the next micro-batch, unwritten in between:
// the second conversion reads the first's result. A conversion to another
// type, and one of another value, stay.
// CHECK-LABEL: func.func @micro_batches
// CHECK: %[[W:.*]] = whale.cast %arg0 : tensor<16x32xf32> to tensor<16x32xbf16>
// CHECK: whale.matmul %arg1, %[[W]]
// CHECK: whale.matmul %arg2, %[[W]]
// CHECK: whale.cast %arg3 : tensor<16x32xf32> to tensor<16x32xbf16>
// CHECK-NOT: whale.cast %arg0 : tensor<16x32xf32> to tensor<16x32xbf16>
func.func @micro_batches(%w: tensor<16x32xf32>, %x1: tensor<8x16xbf16>, %x2: tensor<8x16xbf16>, %other: tensor<16x32xf32>) -> (tensor<8x32xbf16>, tensor<8x32xbf16>, tensor<16x32xbf16>) {
  %w1 = whale.cast %w : tensor<16x32xf32> to tensor<16x32xbf16>
  %y1 = whale.matmul %x1, %w1 : tensor<8x16xbf16>, tensor<16x32xbf16> -> tensor<8x32xbf16>
  %w2 = whale.cast %w : tensor<16x32xf32> to tensor<16x32xbf16>
  %y2 = whale.matmul %x2, %w2 : tensor<8x16xbf16>, tensor<16x32xbf16> -> tensor<8x32xbf16>
  %o = whale.cast %other : tensor<16x32xf32> to tensor<16x32xbf16>
  return %y1, %y2, %o : tensor<8x32xbf16>, tensor<8x32xbf16>, tensor<16x32xbf16>
}

// -----

// The optimizer writes the weight between the two: both conversions stay,
// also where an in-place op (clipping) writes a view of the value.
// CHECK-LABEL: func.func @written_between
// CHECK: %[[W:.*]] = whale.param "w"
// CHECK-COUNT-2: whale.cast %[[W]]
// CHECK-COUNT-2: whale.cast %arg1
func.func @written_between(%g: tensor<16x32xf32>, %v: tensor<512xf32>) -> (tensor<16x32xbf16>, tensor<16x32xbf16>, tensor<512xbf16>, tensor<512xbf16>) {
  %w = whale.param "w" normal [0.0, 0.02] : tensor<16x32xf32>
  %w1 = whale.cast %w : tensor<16x32xf32> to tensor<16x32xbf16>
  whale.adam_update %w, %g {beta1 = 9.000000e-01 : f64, beta2 = 0.999 : f64, eps = 1.000000e-08 : f64, lr = 1.000000e-03 : f64, weight_decay = 0.000000e+00 : f64} : tensor<16x32xf32>
  %w2 = whale.cast %w : tensor<16x32xf32> to tensor<16x32xbf16>
  %v1 = whale.cast %v : tensor<512xf32> to tensor<512xbf16>
  %view = whale.reshape %v : tensor<512xf32> -> tensor<16x32xf32>
  %c = whale.clip_grad_norm %view max_norm = 1.0 over "stages" : tensor<16x32xf32> -> tensor<16x32xf32>
  %v2 = whale.cast %v : tensor<512xf32> to tensor<512xbf16>
  return %w1, %w2, %v1, %v2 : tensor<16x32xbf16>, tensor<16x32xbf16>, tensor<512xbf16>, tensor<512xbf16>
}

// -----

// A conversion written in place (a widened gradient clipped, or
// all-reduced) is not the value converted any more: a later conversion
// of the same value stays.
// CHECK-LABEL: func.func @conversion_written
// CHECK-COUNT-2: whale.cast %arg0 : tensor<16x32xbf16> to tensor<16x32xf32>
func.func @conversion_written(%h: tensor<16x32xbf16>) -> (tensor<16x32xf32>, tensor<16x32xf32>) {
  %g1 = whale.cast %h : tensor<16x32xbf16> to tensor<16x32xf32>
  %c = whale.clip_grad_norm %g1 max_norm = 1.0 over "stages" : tensor<16x32xf32> -> tensor<16x32xf32>
  %g2 = whale.cast %h : tensor<16x32xbf16> to tensor<16x32xf32>
  return %c, %g2 : tensor<16x32xf32>, tensor<16x32xf32>
}
