use processors::prelude::*;

#[processor(ouput_stream)]
fn shout(chunk: &Chunk) -> StreamAction {
    let _ = chunk;
    StreamAction::Pass
}

fn main() {}
