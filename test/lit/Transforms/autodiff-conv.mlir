// RUN: whale-opt %s --whale-autodiff | FileCheck %s
// RUN: whale-opt %s --whale-autodiff --whale-to-runtime | FileCheck %s --check-prefix=RT

// A convolution and a pooling differentiate into their gradient ops, with
// the forward op's window, groups and kind; only the weight's gradient of
// the first convolution is used, but conv2d_grad makes both; the runtime
// call passes null for the input's gradient nothing reads, and the runtime
// leaves it out.
// CHECK-LABEL: func.func @m_grad
// CHECK-SAME: whale.gradients = ["m/w"]
// CHECK: %[[Y:.*]] = whale.conv2d %[[X:.*]], %[[W:.*]] stride = [2, 2] padding = [1, 1] dilation = [1, 1] groups = 1
// CHECK: %[[P:.*]] = whale.pool2d %[[Y]] kind = "max" kernel = [2, 2] stride = [2, 2] padding = [0, 0]
// CHECK: %[[DP:.*]] = whale.pool2d_grad %[[Y]], %{{.*}} kind = "max" kernel = [2, 2] stride = [2, 2] padding = [0, 0]
// CHECK: %{{.*}}, %[[DW:.*]] = whale.conv2d_grad %[[X]], %[[W]], %[[DP]] stride = [2, 2] padding = [1, 1] dilation = [1, 1] groups = 1
// CHECK: return %{{.*}}, %[[DW]]

// RT-LABEL: llvm.func @m_grad
// RT: llvm.call @whale_rt_conv2d(
// RT: llvm.call @whale_rt_pool2d(
// RT: llvm.call @whale_rt_pool2d_grad(
// RT: %[[NONE:.*]] = llvm.mlir.zero : !llvm.ptr
// RT-NEXT: llvm.call @whale_rt_conv2d_grad(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[NONE]], %{{.*}})
func.func @m(%x: tensor<2x3x8x8xf32>) -> tensor<f32> attributes {whale.model} {
  %w = whale.param "m/w" normal [0.0, 0.02] : tensor<4x3x3x3xf32>
  %y = whale.conv2d %x, %w stride = [2, 2] padding = [1, 1] dilation = [1, 1] groups = 1 : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x4x4xf32>
  %p = whale.pool2d %y kind = "max" kernel = [2, 2] stride = [2, 2] padding = [0, 0] : tensor<2x4x4x4xf32> -> tensor<2x4x2x2xf32>
  %m = whale.reduce_mean %p axes = [0, 1, 2, 3] : tensor<2x4x2x2xf32> -> tensor<f32>
  return %m : tensor<f32>
}
