// RUN: whale-opt %s -split-input-file -verify-diagnostics -allow-unregistered-dialect

func.func @not_elementwise(%x: tensor<4x4xf32>) {
  %r = whale.fused(%x) : (tensor<4x4xf32>) -> (tensor<4x4xf32>) {
  ^bb0(%a: tensor<4x4xf32>):
    // expected-error @+1 {{'whale.softmax' op cannot be part of a fused region}}
    %s = whale.softmax %a axis = 0 : tensor<4x4xf32>
    whale.fused_yield %s : tensor<4x4xf32>
  }
  return
}

// -----

func.func @other_shape(%x: tensor<4x4xf32>, %b: tensor<4xf32>) {
  %r = whale.fused(%x, %b) : (tensor<4x4xf32>, tensor<4xf32>) -> (tensor<4x4xf32>) {
  ^bb0(%a: tensor<4x4xf32>, %c: tensor<4xf32>):
    // expected-error @+1 {{makes 'tensor<4xf32>' in a fused region that iterates over 'tensor<4x4xf32>'}}
    %n = whale.neg %c : tensor<4xf32>
    whale.fused_yield %a : tensor<4x4xf32>
  }
  return
}

// -----

func.func @f64(%x: tensor<4xf64>) {
  // expected-error @+1 {{takes and makes f32 or bf16 tensors, not 'tensor<4xf64>'}}
  %r = whale.fused(%x) : (tensor<4xf64>) -> (tensor<4xf64>) {
  ^bb0(%a: tensor<4xf64>):
    whale.fused_yield %a : tensor<4xf64>
  }
  return
}

// -----

func.func @no_broadcast(%x: tensor<3x4xf32>, %y: tensor<4x4xf32>) {
  // expected-error @+1 {{input 1 of type 'tensor<4x4xf32>' does not broadcast with the inputs before it}}
  %r = whale.fused(%x, %y) : (tensor<3x4xf32>, tensor<4x4xf32>) -> (tensor<4x4xf32>) {
  ^bb0(%a: tensor<3x4xf32>, %b: tensor<4x4xf32>):
    whale.fused_yield %b : tensor<4x4xf32>
  }
  return
}

// -----

func.func @result_type(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{result 1 has type 'tensor<4x1xf32>' but the body yields 'tensor<4x4xf32>'}}
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
  // expected-error @+1 {{body yields 2 values for 1 results}}
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

// -----

func.func @no_inputs() {
  // expected-error @+1 {{has no inputs}}
  %r = "whale.fused"() ({
  ^bb0:
    %c = "test.make"() : () -> tensor<4xf32>
    whale.fused_yield %c : tensor<4xf32>
  }) : () -> tensor<4xf32>
  return
}

// -----

// A sum ends its chain: nothing in the region reads it.
func.func @sum_read_inside(%x: tensor<4x4xf32>) {
  %r = whale.fused(%x) : (tensor<4x4xf32>) -> (tensor<4xf32>) {
  ^bb0(%a: tensor<4x4xf32>):
    // expected-error @+1 {{ends a fused region's chain: only the region's yield may read its sums}}
    %s = whale.reduce_sum %a axes = [1] : tensor<4x4xf32> -> tensor<4xf32>
    %n = whale.neg %s : tensor<4xf32>
    whale.fused_yield %n : tensor<4xf32>
  }
  return
}

// -----

// A sum adds up a value of the iteration shape.
func.func @sum_of_broadcast(%x: tensor<4x4xf32>, %b: tensor<4xf32>) {
  %r:2 = whale.fused(%x, %b) : (tensor<4x4xf32>, tensor<4xf32>) -> (tensor<4x4xf32>, tensor<f32>) {
  ^bb0(%a: tensor<4x4xf32>, %c: tensor<4xf32>):
    // expected-error @+1 {{sums 'tensor<4xf32>' in a fused region that iterates over 'tensor<4x4xf32>'}}
    %s = whale.reduce_sum %c axes = [0] : tensor<4xf32> -> tensor<f32>
    whale.fused_yield %a, %s : tensor<4x4xf32>, tensor<f32>
  }
  return
}

// -----

// A result smaller than the iteration shape must be a sum's.
func.func @small_result(%x: tensor<4x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{result 0 of type 'tensor<4xf32>' is neither the iteration shape 'tensor<4x4xf32>' nor a sum ending the chain}}
  %r = whale.fused(%x, %b) : (tensor<4x4xf32>, tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%a: tensor<4x4xf32>, %c: tensor<4xf32>):
    whale.fused_yield %c : tensor<4xf32>
  }
  return
}

// -----

// An op of each row ends its chain.
func.func @row_op_read_inside(%x: tensor<4x4xf32>) {
  %r = whale.fused(%x) : (tensor<4x4xf32>) -> (tensor<4x4xf32>) {
  ^bb0(%a: tensor<4x4xf32>):
    // expected-error @+1 {{ends a fused region's chain: only the region's yield, or its rounding to bf16, may read its rows}}
    %s = whale.softmax %a axis = 1 : tensor<4x4xf32>
    %n = whale.neg %s : tensor<4x4xf32>
    whale.fused_yield %n : tensor<4x4xf32>
  }
  return
}

// -----

// A row op's rounding to bf16 is stored as it is: nothing else reads it.
func.func @row_rounding_read_inside(%x: tensor<4x4xf32>) {
  %r = whale.fused(%x) : (tensor<4x4xf32>) -> (tensor<4x4xbf16>) {
  ^bb0(%a: tensor<4x4xf32>):
    %s = whale.softmax %a axis = 1 : tensor<4x4xf32>
    // expected-error @+1 {{rounds the rows of a fused region's row op: only the region's yield may read it}}
    %h = whale.cast %s : tensor<4x4xf32> to tensor<4x4xbf16>
    %w = whale.cast %h : tensor<4x4xbf16> to tensor<4x4xf32>
    %n = whale.neg %w : tensor<4x4xf32>
    %o = whale.cast %n : tensor<4x4xf32> to tensor<4x4xbf16>
    whale.fused_yield %o : tensor<4x4xbf16>
  }
  return
}

// -----

// A rounded row is kept apart in f32 between the row op's passes: a
// kernel holds 8192 elements of it.
func.func @row_rounding_too_wide(%x: tensor<2x8193xf32>) {
  %r = whale.fused(%x) : (tensor<2x8193xf32>) -> (tensor<2x8193xbf16>) {
  ^bb0(%a: tensor<2x8193xf32>):
    %s = whale.softmax %a axis = 1 : tensor<2x8193xf32>
    // expected-error @+1 {{rounds rows of 8193 elements, more than the 8192 a fused region keeps apart}}
    %h = whale.cast %s : tensor<2x8193xf32> to tensor<2x8193xbf16>
    whale.fused_yield %h : tensor<2x8193xbf16>
  }
  return
}

// -----

// One op of each row, and no sums beside it.
func.func @row_op_and_sum(%x: tensor<4x4xf32>) {
  %r:2 = whale.fused(%x) : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>) {
  ^bb0(%a: tensor<4x4xf32>):
    %s = whale.softmax %a axis = 1 : tensor<4x4xf32>
    // expected-error @+1 {{'whale.reduce_sum' op cannot end a fused region that ends in whale.softmax}}
    %m = whale.reduce_sum %a axes = [1] : tensor<4x4xf32> -> tensor<4xf32>
    whale.fused_yield %s, %m : tensor<4x4xf32>, tensor<4xf32>
  }
  return
}

// -----

// A region of rows reads whole values, rows or elements.
func.func @row_op_middle_broadcast(%x: tensor<2x4x4xf32>, %c: tensor<2x1x4xf32>) {
  // expected-error @+1 {{input 1 of type 'tensor<2x1x4xf32>' is neither the iteration shape, rows that repeat along it, nor one element, as a region of rows needs}}
  %r = whale.fused(%x, %c) : (tensor<2x4x4xf32>, tensor<2x1x4xf32>) -> (tensor<2x4x4xf32>) {
  ^bb0(%a: tensor<2x4x4xf32>, %b: tensor<2x1x4xf32>):
    %s = whale.add %a, %b : tensor<2x4x4xf32>, tensor<2x1x4xf32> -> tensor<2x4x4xf32>
    %p = whale.softmax %s axis = 2 : tensor<2x4x4xf32>
    whale.fused_yield %p : tensor<2x4x4xf32>
  }
  return
}

// -----

// A layernorm's scale and shift come from outside the region.
func.func @layernorm_scale_inside(%x: tensor<4xf32>) {
  %r = whale.fused(%x) : (tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %e = whale.exp %a : tensor<4xf32>
    // expected-error @+1 {{takes its scale and shift from the region's inputs}}
    %n = whale.layernorm %a, %e, %e eps = 1.0e-5 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
    whale.fused_yield %n : tensor<4xf32>
  }
  return
}

// -----

// So does an RMSNorm's weight.
func.func @rmsnorm_weight_inside(%x: tensor<4xf32>) {
  %r = whale.fused(%x) : (tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %e = whale.exp %a : tensor<4xf32>
    // expected-error @+1 {{takes its weight from the region's inputs}}
    %n = whale.rms_norm %a, %e eps = 1.0e-5 : tensor<4xf32>, tensor<4xf32>
    whale.fused_yield %n : tensor<4xf32>
  }
  return
}

// -----

// An op of each row normalizes a value of the iteration shape.
func.func @row_op_of_a_row(%x: tensor<4x4xf32>, %b: tensor<4xf32>) {
  %r:2 = whale.fused(%x, %b) : (tensor<4x4xf32>, tensor<4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>) {
  ^bb0(%a: tensor<4x4xf32>, %c: tensor<4xf32>):
    // expected-error @+1 {{normalizes 'tensor<4xf32>' in a fused region that iterates over 'tensor<4x4xf32>'}}
    %p = whale.softmax %c axis = -1 : tensor<4xf32>
    whale.fused_yield %a, %p : tensor<4x4xf32>, tensor<4xf32>
  }
  return
}
