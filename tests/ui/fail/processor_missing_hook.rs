use processors::prelude::*;

#[processor]
fn shout(chunk: &Chunk) -> StreamAction {
    let _ = chunk;
    StreamAction::Pass
}

fn main() {}
