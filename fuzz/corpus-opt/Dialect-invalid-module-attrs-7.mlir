module attributes {whale.config = #whale.settings<split_rows = "some">} {}
