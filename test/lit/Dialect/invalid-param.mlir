// RUN: whale-opt %s -split-input-file -verify-diagnostics

func.func @empty_name() {
  // expected-error @+1 {{needs a non-empty name}}
  %0 = whale.param "" zeros [] : tensor<4xf32>
  return
}

// -----

func.func @arg_count() {
  // expected-error @+1 {{initializer 'normal' takes 2 numbers, got 1}}
  %0 = whale.param "p" normal [0.02] : tensor<4xf32>
  return
}

// -----

func.func @zeros_args() {
  // expected-error @+1 {{initializer 'zeros' takes 0 numbers, got 1}}
  %0 = whale.param "p" zeros [1.0] : tensor<4xf32>
  return
}

// -----

func.func @negative_std() {
  // expected-error @+1 {{normal initializer needs a non-negative std}}
  %0 = whale.param "p" normal [0.0, -1.0] : tensor<4xf32>
  return
}

// -----

func.func @uniform_order() {
  // expected-error @+1 {{uniform initializer needs low <= high}}
  %0 = whale.param "p" uniform [1.0, -1.0] : tensor<4xf32>
  return
}

// -----

func.func @dynamic() {
  // expected-error @+1 {{parameter shape must be static}}
  %0 = whale.param "p" zeros [] : tensor<?x4xf32>
  return
}

// -----

func.func @integer_param() {
  // expected-error @+1 {{result #0 must be ranked tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values}}
  %0 = whale.param "p" zeros [] : tensor<4xi32>
  return
}

// -----

func.func @bad_init() {
  // expected-error @+1 {{unknown initializer 'kaiming'}}
  %0 = whale.param "p" kaiming [] : tensor<4xf32>
  return
}
