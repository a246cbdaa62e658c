module {
  func.func @m() attributes {whale.model, whale.plan = {device_seconds = array<i64: 1>}} { return }
}
