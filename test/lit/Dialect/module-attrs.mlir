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
// kind, threads, data sheet, share of its GPU's SMs and the contexts on its
// GPU; the printed form leaves out what is the default.
// CHECK: whale.cluster = #whale.cluster<[<flops = 5.000000e+10 : f64, threads = 4>, <flops = 1.000000e+13 : f64, memory = 1024, gpu = true, model = "H100">, <flops = 1.000000e+13 : f64, gpu = true, sms = 66, contexts = 2>]>
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 5.0e10, threads = 4>, #whale.device<flops = 1.0e13, memory = 1024, gpu = true, model = "H100">, #whale.device<flops = 1.0e13, gpu = true, threads = 1, sms = 66, contexts = 2>]>} {}

// -----

// A CPU device given a quarter of its core's time (cpu:1@share=0.25): its
// rate is already the share's; the share prices its memory traffic too.
// Its memory's bandwidth, as `whale devices --probe` measured it under the
// share, travels beside it.
// CHECK: whale.cluster = #whale.cluster<[<flops = 1.000000e+10 : f64>, <flops = 2.500000e+09 : f64, share = 2.500000e-01 : f64, bandwidth = 4.000000e+09 : f64>]>
module attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e10>, #whale.device<flops = 2.5e9, share = 0.25 : f64, bandwidth = 4.0e9 : f64>]>} {}
