// RUN: whale-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// Rotary position embedding and its inverse round-trip.

// CHECK-LABEL: func.func @rope
// CHECK: whale.rope %{{.*}} theta = 1.000000e+04 : tensor<2x4x16x8xf32>
// CHECK: whale.rope %{{.*}} theta = 5.000000e+05 inverse : tensor<2x4x16x8xf32>
// CHECK: whale.rope %{{.*}} theta = 5.000000e+05 scaling = [8.000000e+00, 1.000000e+00, 4.000000e+00, 8.192000e+03] inverse : tensor<2x4x16x8xf32>
func.func @rope(%q: tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32> {
  %a = whale.rope %q theta = 1.0e4 : tensor<2x4x16x8xf32>
  %b = whale.rope %a theta = 5.0e5 inverse : tensor<2x4x16x8xf32>
  %c = whale.rope %b theta = 5.0e5 scaling = [8.0, 1.0, 4.0, 8192.0] inverse : tensor<2x4x16x8xf32>
  return %c : tensor<2x4x16x8xf32>
}

// -----

// A decoding step's rows at a position read when it runs.
// CHECK-LABEL: func.func @at
// CHECK: whale.rope %{{.*}} at %{{.*}} theta = 1.000000e+04 : tensor<2x4x1x8xf32>
func.func @at(%q: tensor<2x4x1x8xf32>, %p: tensor<i32>) -> tensor<2x4x1x8xf32> {
  %a = whale.rope %q at %p theta = 1.0e4 : tensor<2x4x1x8xf32>
  return %a : tensor<2x4x1x8xf32>
}

// -----

func.func @at_vector(%q: tensor<2x4x1x8xf32>, %p: tensor<1xi32>) {
  // expected-error @+1 {{operand #1 must be 0D tensor of 32-bit signless integer values}}
  %a = "whale.rope"(%q, %p) <{theta = 1.0e4 : f64}> : (tensor<2x4x1x8xf32>, tensor<1xi32>) -> tensor<2x4x1x8xf32>
  return
}

// -----

func.func @odd(%q: tensor<16x7xf32>) {
  // expected-error @+1 {{needs [..., T, E] with E even, got 'tensor<16x7xf32>'}}
  %a = whale.rope %q theta = 1.0e4 : tensor<16x7xf32>
  return
}

// -----

func.func @rank(%q: tensor<8xf32>) {
  // expected-error @+1 {{needs [..., T, E] with E even}}
  %a = whale.rope %q theta = 1.0e4 : tensor<8xf32>
  return
}

// -----

func.func @theta(%q: tensor<16x8xf32>) {
  // expected-error @+1 {{theta must be greater than 1}}
  %a = whale.rope %q theta = 1.0 : tensor<16x8xf32>
  return
}

// -----

func.func @scaling_size(%q: tensor<16x8xf32>) {
  // expected-error @+1 {{scaling is [factor, low_freq_factor, high_freq_factor, original_max_position_embeddings]}}
  %a = whale.rope %q theta = 1.0e4 scaling = [8.0, 1.0] : tensor<16x8xf32>
  return
}

// -----

func.func @scaling_order(%q: tensor<16x8xf32>) {
  // expected-error @+1 {{scaling needs factor >= 1, 0 < low_freq_factor < high_freq_factor}}
  %a = whale.rope %q theta = 1.0e4 scaling = [8.0, 4.0, 1.0, 8192.0] : tensor<16x8xf32>
  return
}
