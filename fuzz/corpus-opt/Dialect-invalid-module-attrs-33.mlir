module {
  func.func @m() attributes {whale.model, whale.plan = {schedule = "interleaved"}} { return }
}
