// RUN: whale-opt %s -split-input-file | FileCheck %s

// The script's config on the module, its train block and default strategy
// on the model function.
// CHECK: module attributes {whale.config = #whale.settings<num_micro_batch = 4, recompute = true, schedule = "1f1b", balance = "hardware", grad_sync = "after_backward", virtual_stages = 2>}
// CHECK: func.func @m({{.*}}) attributes {whale.default_devices = 2 : i64, whale.default_strategy = #whale<strategy split>, whale.model, whale.train = {steps = 10 : i64}}
module attributes {whale.config = #whale.settings<schedule = "1f1b", num_micro_batch = 4, balance = "hardware", recompute = true, grad_sync = "after_backward", virtual_stages = 2>} {
  func.func @m(%x: tensor<4xf32>) attributes {whale.model, whale.default_strategy = #whale<strategy split>, whale.default_devices = 2, whale.train = {steps = 10}} {
    return
  }
}

// -----

// A cluster as the planner writes it: every device's rate, memory limit,
// kind, threads and data sheet ("" for none).
// CHECK: whale.cluster = {flops = array<f64: 5.000000e+10, 1.000000e+13>, gpus = array<i1: false, true>, memory = array<i64: 0, 1024>, models = ["", "H100"], threads = array<i64: 4, 1>}
module attributes {whale.cluster = {flops = array<f64: 5.0e10, 1.0e13>, memory = array<i64: 0, 1024>, gpus = array<i1: false, true>, threads = array<i64: 4, 1>, models = ["", "H100"]}} {}
