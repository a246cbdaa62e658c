module attributes {whale.config = #whale.settings<schedule = "interleaved">} {}
