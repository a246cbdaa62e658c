module attributes {whale.config = #whale.settings<balance = "fast">} {}
