use processors::prelude::*;

#[processor(input)]
fn check(chunk: &Chunk) {
    let _ = chunk;
}

fn main() {}
