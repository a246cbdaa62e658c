func.func @f() attributes {whale.default_strategy = "replicate"} { return }
