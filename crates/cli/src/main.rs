//! `nf`: the ninefold command line.
fn main() {}
