// RUN: whale-opt %s -split-input-file --whale-to-runtime -verify-diagnostics

// The runtime has f32, f64, i32, i64 and bf16 tensors, and f32 parameters;
// bf16 is storage, converted by whale.cast only.

func.func @bf16_param() -> tensor<4xbf16> attributes {whale.model} {
  // expected-error @+1 {{the CPU runtime keeps f32 parameters only}}
  %p = whale.param "p" zeros [] : tensor<4xbf16>
  return %p : tensor<4xbf16>
}

// -----

func.func @bf16_tensor(%x: tensor<4xbf16>) -> tensor<4xbf16> attributes {whale.model} {
  // expected-error @+1 {{'whale.relu' op computes in f32 on the runtime; a bf16 value reaches it only through whale.cast}}
  %r = whale.relu %x : tensor<4xbf16>
  return %r : tensor<4xbf16>
}

// -----

func.func @f16_tensor(%x: tensor<4xf32>) -> tensor<4xf16> attributes {whale.model} {
  // expected-error @+1 {{the CPU runtime has no 'f16' tensors yet}}
  %c = whale.constant 1.0 : tensor<4xf16>
  return %c : tensor<4xf16>
}

// -----

// A model that calls itself: inlining its call copied its body into itself
// without end.
func.func @m(%x: tensor<4xf32>) -> tensor<4xf32> attributes {whale.model} {
  // expected-error @+1 {{calls @m, which makes calls itself: only a rank program's steps, which call nothing, are inlined}}
  %y = func.call @m(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// An op defined by its formula is computed in f32 by a region's kernel; a
// bf16 value reaches it only through a cast.
func.func @silu_bf16(%x: tensor<4xbf16>) -> tensor<4xbf16> attributes {whale.model} {
  // expected-error @+1 {{is computed from its formula on f32 tensors; a bf16 value reaches it only through whale.cast}}
  %y = whale.silu %x : tensor<4xbf16>
  return %y : tensor<4xbf16>
}

// -----

// An op that no conversion pattern lowers is named, not left in the
// lowered function.
func.func @foreign(%x: tensor<4xf32>) -> tensor<4xf32> attributes {whale.model} {
  // expected-error @+1 {{failed to legalize operation 'scf.execute_region'}}
  %y = scf.execute_region -> tensor<4xf32> {
    scf.yield %x : tensor<4xf32>
  }
  return %y : tensor<4xf32>
}
