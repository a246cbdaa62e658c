// RUN: whale-opt %s -split-input-file -verify-diagnostics

func.func @not_elementwise(%x: tensor<4x4xf32>) {
  %r = whale.fused(%x) : (tensor<4x4xf32>) -> (tensor<4x4xf32>) {
  ^bb0(%a: tensor<4x4xf32>):
    // expected-error @+1 {{'whale.softmax' op cannot be part of a fused region}}
    %s = whale.softmax %a axis = 1 : tensor<4x4xf32>
    whale.fused_yield %s : tensor<4x4xf32>
  }
  return
}

// -----

func.func @other_shape(%x: tensor<4x4xf32>, %b: tensor<4xf32>) {
  %r = whale.fused(%b) : (tensor<4xf32>) -> (tensor<4x4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    // expected-error @+1 {{makes 'tensor<4xf32>' in a fused region that iterates over 'tensor<4x4xf32>'}}
    %n = whale.neg %a : tensor<4xf32>
    whale.fused_yield %n : tensor<4xf32>
  }
  return
}

// -----

func.func @f64(%x: tensor<4xf64>) {
  // expected-error @+1 {{computes f32 only, not 'f64'}}
  %r = whale.fused(%x) : (tensor<4xf64>) -> (tensor<4xf64>) {
  ^bb0(%a: tensor<4xf64>):
    whale.fused_yield %a : tensor<4xf64>
  }
  return
}

// -----

func.func @no_broadcast(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{input 0 of type 'tensor<3x4xf32>' does not broadcast to the iteration shape of the results}}
  %r = whale.fused(%x) : (tensor<3x4xf32>) -> (tensor<4x4xf32>) {
  ^bb0(%a: tensor<3x4xf32>):
    whale.fused_yield %a : tensor<3x4xf32>
  }
  return
}

// -----

func.func @results_differ(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{results must all have one type, not 'tensor<4x4xf32>' and 'tensor<4x1xf32>'}}
  %r:2 = whale.fused(%x) : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x1xf32>) {
  ^bb0(%a: tensor<4x4xf32>):
    whale.fused_yield %a, %a : tensor<4x4xf32>, tensor<4x4xf32>
  }
  return
}

// -----

func.func @arguments(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{body takes 2 arguments for 1 inputs}}
  %r = whale.fused(%x) : (tensor<4x4xf32>) -> (tensor<4x4xf32>) {
  ^bb0(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>):
    whale.fused_yield %a : tensor<4x4xf32>
  }
  return
}

// -----

func.func @yields(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{body yields 2 values for 1 results of type 'tensor<4x4xf32>'}}
  %r = whale.fused(%x) : (tensor<4x4xf32>) -> (tensor<4x4xf32>) {
  ^bb0(%a: tensor<4x4xf32>):
    whale.fused_yield %a, %a : tensor<4x4xf32>, tensor<4x4xf32>
  }
  return
}

// -----

func.func @isolated(%x: tensor<4x4xf32>) {
  // expected-note @+1 {{required by region isolation constraints}}
  %r = whale.fused(%x) : (tensor<4x4xf32>) -> (tensor<4x4xf32>) {
  ^bb0(%a: tensor<4x4xf32>):
    // expected-error @+1 {{using value defined outside the region}}
    %n = whale.add %a, %x : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    whale.fused_yield %n : tensor<4x4xf32>
  }
  return
}
