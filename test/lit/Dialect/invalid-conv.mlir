// RUN: whale-opt %s -split-input-file -verify-diagnostics

func.func @groups(%x: tensor<2x6x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+1 {{weight 'tensor<4x4x3x3xf32>' does not fit 6 input channels in 2 groups}}
  %y = whale.conv2d %x, %w stride = [1, 1] padding = [0, 0] dilation = [1, 1] groups = 2 : tensor<2x6x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<2x4x6x6xf32>
  return
}

// -----

func.func @too_big(%x: tensor<2x3x4x4xf32>, %w: tensor<4x3x7x7xf32>) {
  // expected-error @+1 {{the kernel 7x7 does not fit the padded input 4x4}}
  %y = whale.conv2d %x, %w stride = [1, 1] padding = [1, 1] dilation = [1, 1] groups = 1 : tensor<2x3x4x4xf32>, tensor<4x3x7x7xf32> -> tensor<2x4x1x1xf32>
  return
}

// -----

func.func @result(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{result}}
  %y = whale.conv2d %x, %w stride = [2, 2] padding = [1, 1] dilation = [1, 1] groups = 1 : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x8x8xf32>
  return
}

// -----

func.func @stride(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{stride and dilation are two values >= 1, padding two >= 0, groups >= 1}}
  %y = whale.conv2d %x, %w stride = [0, 1] padding = [1, 1] dilation = [1, 1] groups = 1 : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x8x8xf32>
  return
}

// -----

func.func @rank(%x: tensor<3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{input [N, C, H, W] and weight [O, C / groups, KH, KW] must be 4-D}}
  %y = whale.conv2d %x, %w stride = [1, 1] padding = [1, 1] dilation = [1, 1] groups = 1 : tensor<3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<4x8x8xf32>
  return
}

// -----

func.func @kind(%x: tensor<2x3x8x8xf32>) {
  // expected-error @+1 {{kind is "max" or "avg", got "min"}}
  %y = whale.pool2d %x kind = "min" kernel = [2, 2] stride = [2, 2] padding = [0, 0] : tensor<2x3x8x8xf32> -> tensor<2x3x4x4xf32>
  return
}

// -----

func.func @pad(%x: tensor<2x3x8x8xf32>) {
  // expected-error @+1 {{kernel and stride are two values >= 1, padding two from 0 to half the kernel}}
  %y = whale.pool2d %x kind = "avg" kernel = [2, 2] stride = [2, 2] padding = [2, 0] : tensor<2x3x8x8xf32> -> tensor<2x3x6x4xf32>
  return
}

// -----

func.func @grad_dy(%x: tensor<2x3x8x8xf32>, %d: tensor<2x3x8x8xf32>) {
  // expected-error @+1 {{dy}}
  %dx = whale.pool2d_grad %x, %d kind = "max" kernel = [2, 2] stride = [2, 2] padding = [0, 0] : tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32>
  return
}

// -----

// Window values whose shape arithmetic would wrap around int64.
func.func @huge_window(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{kernel, stride, padding and dilation are each at most 2^30}}
  %y = whale.conv2d %x, %w stride = [1, 1] padding = [4611686018427387904, 1] dilation = [4611686018427387904, 1] groups = 1 : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x8x8xf32>
  return
}

// -----

func.func @huge_pool(%x: tensor<2x3x8x8xf32>) {
  // expected-error @+1 {{kernel, stride and padding are each at most 2^30}}
  %y = whale.pool2d %x kind = "avg" kernel = [4611686018427387904, 2] stride = [2, 2] padding = [2305843009213693952, 0] : tensor<2x3x8x8xf32> -> tensor<2x3x4x4xf32>
  return
}
