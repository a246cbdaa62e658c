module {
  func.func @f() attributes {whale.config = #whale.settings<>} { return }
}
