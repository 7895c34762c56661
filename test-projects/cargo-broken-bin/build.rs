fn unused_helper() {}

fn main() {}
