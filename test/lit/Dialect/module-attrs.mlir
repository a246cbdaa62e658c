// RUN: whale-opt %s | FileCheck %s

// The script's config on the module, its train block and default strategy
// on the model function.
// CHECK: module attributes {whale.config = #whale.settings<num_micro_batch = 4, recompute = true, schedule = "1f1b", balance = "hardware", grad_sync = "after_backward", virtual_stages = 2>}
// CHECK: func.func @m({{.*}}) attributes {whale.default_devices = 2 : i64, whale.default_strategy = #whale<strategy split>, whale.model, whale.train = {steps = 10 : i64}}
module attributes {whale.config = #whale.settings<schedule = "1f1b", num_micro_batch = 4, balance = "hardware", recompute = true, grad_sync = "after_backward", virtual_stages = 2>} {
  func.func @m(%x: tensor<4xf32>) attributes {whale.model, whale.default_strategy = #whale<strategy split>, whale.default_devices = 2, whale.train = {steps = 10}} {
    return
  }
}
