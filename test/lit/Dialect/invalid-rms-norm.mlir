// RUN: whale-opt %s -split-input-file -verify-diagnostics

func.func @rank(%x: tensor<f32>, %w: tensor<1xf32>) {
  // expected-error @+1 {{input needs rank >= 1}}
  %0 = whale.rms_norm %x, %w eps = 1.0e-5 : tensor<f32>, tensor<1xf32>
  return
}

// -----

func.func @weight(%x: tensor<8x16xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{weight should have shape [16] but has 'tensor<8xf32>'}}
  %0 = whale.rms_norm %x, %w eps = 1.0e-5 : tensor<8x16xf32>, tensor<8xf32>
  return
}

// -----

func.func @weight_type(%x: tensor<8x16xf32>, %w: tensor<16xbf16>) {
  // expected-error @+1 {{input and weight}}
  %0 = whale.rms_norm %x, %w eps = 1.0e-5 : tensor<8x16xf32>, tensor<16xbf16>
  return
}

// -----

func.func @eps(%x: tensor<8x16xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{eps must be positive}}
  %0 = whale.rms_norm %x, %w eps = 0.0 : tensor<8x16xf32>, tensor<16xf32>
  return
}

// -----

func.func @grad_weight(%x: tensor<8x16xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{weight should have shape [16] but has 'tensor<4xf32>'}}
  %0:2 = whale.rms_norm_grad %x, %w, %x eps = 1.0e-5 : tensor<8x16xf32>, tensor<4xf32>
  return
}

// -----

func.func @grad_eps(%x: tensor<8x16xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{eps must be positive}}
  %0:2 = whale.rms_norm_grad %x, %w, %x eps = -1.0 : tensor<8x16xf32>, tensor<16xf32>
  return
}

// -----

// `plus`: the residual's gradient has the input's type.
func.func @grad_residual(%x: tensor<8x16xf32>, %w: tensor<16xf32>, %r: tensor<4x16xf32>) {
  // expected-error @+1 {{residual must have the input's type 'tensor<8x16xf32>', got 'tensor<4x16xf32>'}}
  %0:2 = whale.rms_norm_grad %x, %w, %x plus %r eps = 1.0e-5 : tensor<8x16xf32>, tensor<16xf32>, tensor<4x16xf32>
  return
}
