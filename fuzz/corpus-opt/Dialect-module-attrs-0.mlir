module attributes {whale.config = #whale.settings<schedule = "1f1b", num_micro_batch = 4, balance = "hardware", recompute = true, grad_sync = "after_backward", virtual_stages = 2>} {
  func.func @m(%x: tensor<4xf32>) attributes {whale.model, whale.default_strategy = #whale<strategy split>, whale.default_devices = 2, whale.train = {steps = 10}} {
    return
  }
}
