// RUN: whale-opt %s -split-input-file --whale-to-runtime -verify-diagnostics

// The CPU runtime has f32, f64, i32 and i64 tensors, and f32 parameters.

func.func @bf16_param() -> tensor<4xbf16> attributes {whale.model} {
  // expected-error @+1 {{the CPU runtime keeps f32 parameters only}}
  %p = whale.param "p" zeros [] : tensor<4xbf16>
  return %p : tensor<4xbf16>
}

// -----

func.func @bf16_tensor(%x: tensor<4xbf16>) -> tensor<4xbf16> attributes {whale.model} {
  // expected-error @+1 {{the CPU runtime has no 'bf16' tensors yet}}
  %r = whale.relu %x : tensor<4xbf16>
  return %r : tensor<4xbf16>
}
