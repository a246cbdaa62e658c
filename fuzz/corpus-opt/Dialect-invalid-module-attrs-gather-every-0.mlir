module attributes {whale.config = #whale.settings<gather_every = "step">} {}
