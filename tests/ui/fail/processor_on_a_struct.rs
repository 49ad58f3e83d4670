use processors::prelude::*;

#[processor(output_stream)]
struct Shout;

fn main() {}
