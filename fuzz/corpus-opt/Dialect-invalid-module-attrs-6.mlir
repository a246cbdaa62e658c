module attributes {whale.config = #whale.settings<amp = "fp16">} {}
