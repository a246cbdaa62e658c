module {
  func.func @m() attributes {whale.model, whale.train = {steps = 1, clip_grad_norm = 0.0}} { return }
}
