// RUN: whale-opt %s -split-input-file -verify-diagnostics

func.func @reshape_count(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{cannot reshape 128 elements into 'tensor<8x15xf32>'}}
  %0 = whale.reshape %x : tensor<8x16xf32> -> tensor<8x15xf32>
  return
}

// -----

func.func @reshape_type(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{input and result element types differ: 'f32' vs 'i32'}}
  %0 = whale.reshape %x : tensor<8x16xf32> -> tensor<128xi32>
  return
}

// -----

func.func @perm_size(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{permutation has 3 entries for rank 2}}
  %0 = whale.transpose %x permutation = [0, 1, 2] : tensor<8x16xf32> -> tensor<8x16xf32>
  return
}

// -----

func.func @perm_repeat(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{permutation must hold each dimension once}}
  %0 = whale.transpose %x permutation = [1, 1] : tensor<8x16xf32> -> tensor<16x16xf32>
  return
}

// -----

func.func @perm_result(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{result should have shape [16, 8] but has 'tensor<8x16xf32>'}}
  %0 = whale.transpose %x permutation = [1, 0] : tensor<8x16xf32> -> tensor<8x16xf32>
  return
}

// -----

func.func @perm_type(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{input and result element types differ: 'f32' vs 'f16'}}
  %0 = whale.transpose %x permutation = [1, 0] : tensor<8x16xf32> -> tensor<16x8xf16>
  return
}

// -----

func.func @slice_axis(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{axis 3 is out of range for rank 2}}
  %0 = whale.slice %x axis = 3, start = 0, end = 1 : tensor<8x16xf32> -> tensor<8x1xf32>
  return
}

// -----

func.func @slice_range(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{range [4, 20) is empty or outside [0, 16)}}
  %0 = whale.slice %x axis = 1, start = 4, end = 20 : tensor<8x16xf32> -> tensor<8x16xf32>
  return
}

// -----

// A negative start is reported as written, not as its unsigned reading.
func.func @slice_negative_start(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{range [-1, 4) is empty or outside [0, 16)}}
  %0 = whale.slice %x axis = 1, start = -1, end = 4 : tensor<8x16xf32> -> tensor<8x5xf32>
  return
}

// -----

func.func @slice_result(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{result should have shape [8, 4] but has 'tensor<8x5xf32>'}}
  %0 = whale.slice %x axis = 1, start = 0, end = 4 : tensor<8x16xf32> -> tensor<8x5xf32>
  return
}

// -----

func.func @slice_type(%x: tensor<8x16xf32>) {
  // expected-error @+1 {{input and result element types differ: 'f32' vs 'f16'}}
  %0 = whale.slice %x axis = 1, start = 0, end = 4 : tensor<8x16xf32> -> tensor<8x4xf16>
  return
}

// -----

func.func @concat_empty() {
  // expected-error @+1 {{needs at least one input}}
  %0 = "whale.concat"() <{axis = 0 : i64}> : () -> tensor<4xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = whale.concat %a, %a axis = 2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x16xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<4x8xf32>, %b: tensor<4x8x1xf32>) {
  // expected-error @+1 {{inputs differ in rank}}
  %0 = whale.concat %a, %b axis = 1 : tensor<4x8xf32>, tensor<4x8x1xf32> -> tensor<4x16xf32>
  return
}

// -----

func.func @concat_dims(%a: tensor<4x8xf32>, %b: tensor<5x8xf32>) {
  // expected-error @+1 {{inputs differ in dimension 0 which is not the concat axis}}
  %0 = whale.concat %a, %b axis = 1 : tensor<4x8xf32>, tensor<5x8xf32> -> tensor<4x16xf32>
  return
}

// -----

func.func @concat_types(%a: tensor<4x8xf32>, %b: tensor<4x8xf16>) {
  // expected-error @+1 {{input element types differ: 'f32' vs 'f16'}}
  %0 = whale.concat %a, %b axis = 1 : tensor<4x8xf32>, tensor<4x8xf16> -> tensor<4x16xf32>
  return
}

// -----

func.func @concat_result(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{result should have shape [4, 16] but has 'tensor<4x15xf32>'}}
  %0 = whale.concat %a, %a axis = 1 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x15xf32>
  return
}

// -----

func.func @concat_result_type(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{input and result element types differ: 'f32' vs 'f16'}}
  %0 = whale.concat %a, %a axis = 1 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x16xf16>
  return
}
