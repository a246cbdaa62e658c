module {
  func.func @f() attributes {whale.cluster = #whale.cluster<[#whale.device<flops = 1.0e9>]>} { return }
}
