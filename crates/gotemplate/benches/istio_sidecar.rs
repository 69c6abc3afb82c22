//! Criterion benchmark (filled in below).

fn main() {}
