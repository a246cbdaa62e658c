// RUN: whale-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// A decoding step's attention over a key/value cache: grouped keys (2 key
// heads for 4 query heads), one new row, a cache of 16 positions.

// CHECK-LABEL: func.func @step
// CHECK: %result, %new_key_cache, %new_value_cache = whale.kv_attention %arg0, %arg1, %arg2 into %arg3, %arg4 at %arg5 scale = 0.35355340000000002 : tensor<1x4x1x8xf32>, tensor<1x2x1x8xf32>, tensor<1x2x16x8xf32>
func.func @step(%q: tensor<1x4x1x8xf32>, %k: tensor<1x2x1x8xf32>, %v: tensor<1x2x1x8xf32>, %kc: tensor<1x2x16x8xf32>, %vc: tensor<1x2x16x8xf32>, %p: tensor<i32>) -> (tensor<1x4x1x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) {
  %o, %kc2, %vc2 = whale.kv_attention %q, %k, %v into %kc, %vc at %p scale = 0.3535534 : tensor<1x4x1x8xf32>, tensor<1x2x1x8xf32>, tensor<1x2x16x8xf32>
  return %o, %kc2, %vc2 : tensor<1x4x1x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>
}

// -----

func.func @heads(%q: tensor<1x3x1x8xf32>, %k: tensor<1x2x1x8xf32>, %c: tensor<1x2x16x8xf32>, %p: tensor<i32>) {
  // expected-error @+1 {{key heads (2) must divide query heads (3)}}
  %o, %a, %b = whale.kv_attention %q, %k, %k into %c, %c at %p scale = 1.0 : tensor<1x3x1x8xf32>, tensor<1x2x1x8xf32>, tensor<1x2x16x8xf32>
  return
}

// -----

func.func @rank(%q: tensor<4x1x8xf32>, %k: tensor<2x1x8xf32>, %c: tensor<2x16x8xf32>, %p: tensor<i32>) {
  // expected-error @+1 {{must be [B, H, N, E] of rank 4}}
  %o, %a, %b = whale.kv_attention %q, %k, %k into %c, %c at %p scale = 1.0 : tensor<4x1x8xf32>, tensor<2x1x8xf32>, tensor<2x16x8xf32>
  return
}

// -----

func.func @width(%q: tensor<1x4x1x8xf32>, %k: tensor<1x2x1x4xf32>, %c: tensor<1x2x16x4xf32>, %p: tensor<i32>) {
  // expected-error @+1 {{differ in B, N or E}}
  %o, %a, %b = whale.kv_attention %q, %k, %k into %c, %c at %p scale = 1.0 : tensor<1x4x1x8xf32>, tensor<1x2x1x4xf32>, tensor<1x2x16x4xf32>
  return
}

// -----

func.func @cache_heads(%q: tensor<1x4x1x8xf32>, %k: tensor<1x2x1x8xf32>, %c: tensor<1x4x16x8xf32>, %p: tensor<i32>) {
  // expected-error @+1 {{must hold the key's B, heads and E}}
  %o, %a, %b = whale.kv_attention %q, %k, %k into %c, %c at %p scale = 1.0 : tensor<1x4x1x8xf32>, tensor<1x2x1x8xf32>, tensor<1x4x16x8xf32>
  return
}

// -----

func.func @too_many_rows(%q: tensor<1x4x32x8xf32>, %k: tensor<1x2x32x8xf32>, %c: tensor<1x2x16x8xf32>, %p: tensor<i32>) {
  // expected-error @+1 {{the cache holds 16 positions, fewer than the 32 new rows}}
  %o, %a, %b = whale.kv_attention %q, %k, %k into %c, %c at %p scale = 1.0 : tensor<1x4x32x8xf32>, tensor<1x2x32x8xf32>, tensor<1x2x16x8xf32>
  return
}

// -----

func.func @cache_type(%q: tensor<1x4x1x8xf32>, %k: tensor<1x2x1x8xf32>, %c: tensor<1x2x16x8xbf16>, %p: tensor<i32>) {
  // expected-error @+1 {{key and cache}}
  %o, %a, %b = whale.kv_attention %q, %k, %k into %c, %c at %p scale = 1.0 : tensor<1x4x1x8xf32>, tensor<1x2x1x8xf32>, tensor<1x2x16x8xbf16>
  return
}
