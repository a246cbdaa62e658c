// RUN: whale-opt %s -split-input-file --whale-autodiff --whale-train-step | FileCheck %s
// RUN: whale-opt %s -split-input-file --whale-autodiff --whale-train-step --whale-to-runtime | FileCheck %s --check-prefix=LOWER

// @m_train: the gradients as in @m_grad, clipped when the train block says
// so, then each parameter updated by the train block's optimizer.
// CHECK-LABEL: func.func @m_train(%{{.*}}: tensor<4x3xf32>) -> tensor<f32>
// CHECK: %[[G:.*]] = whale.matmul_grad {{.*}} operand = 1
// CHECK: %[[C:.*]] = whale.clip_grad_norm %[[G]] max_norm = 5.000000e-01
// CHECK: whale.adam_update %[[W:.*]], %[[C]] {beta1 = 9.000000e-01 : f64, {{.*}}decoupled, {{.*}}lr = 2.000000e-02 : f64, weight_decay = 1.000000e-01 : f64}
// CHECK: return %{{.*}} : tensor<f32>
// LOWER-LABEL: llvm.func @m_train
// LOWER: llvm.call @whale_rt_clip_grad_norm
// LOWER: llvm.call @whale_rt_adam_step
func.func @m(%x: tensor<4x3xf32>) -> tensor<f32> attributes {whale.model, whale.train = {optimizer = {kind = "adamw", lr = 0.02, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.1}, clip_grad_norm = 0.5, steps = 10}} {
  %w = whale.param "m/w" normal [0.0, 0.02] : tensor<3x2xf32>
  %y = whale.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %l = whale.reduce_mean %y axes = [0, 1] : tensor<4x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// SGD, no clipping.
// CHECK-LABEL: func.func @s_train
// CHECK-NOT: clip_grad_norm
// CHECK: whale.sgd_update %{{.*}}, %{{.*}} {lr = 5.000000e-01 : f64, momentum = 0.000000e+00 : f64, weight_decay = 0.000000e+00 : f64}
// LOWER-LABEL: llvm.func @s_train
// LOWER: llvm.call @whale_rt_sgd_step
func.func @s(%x: tensor<2xf32>) -> tensor<f32> attributes {whale.model, whale.train = {optimizer = {kind = "sgd", lr = 0.5}, steps = 1}} {
  %p = whale.param "p" ones [] : tensor<2xf32>
  %y = whale.mul %x, %p : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %l = whale.reduce_sum %y axes = [0] : tensor<2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An optimizer written by hand with its kind only trains as the script's
// `adamw()` does: every argument its constructor's default
// (support/SettingCtors.cpp), adamw's weight decay 0.01 included.
// CHECK-LABEL: func.func @d_train
// CHECK: whale.adam_update %{{.*}}, %{{.*}} {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, decoupled, eps = 1.000000e-08 : f64, lr = 1.000000e-03 : f64, weight_decay = 1.000000e-02 : f64}
func.func @d(%x: tensor<2xf32>) -> tensor<f32> attributes {whale.model, whale.train = {optimizer = {kind = "adamw"}, steps = 1}} {
  %p = whale.param "p" ones [] : tensor<2xf32>
  %y = whale.mul %x, %p : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %l = whale.reduce_sum %y axes = [0] : tensor<2xf32> -> tensor<f32>
  return %l : tensor<f32>
}
