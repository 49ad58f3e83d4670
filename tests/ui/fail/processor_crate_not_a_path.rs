use processors::prelude::*;

#[processor(output_stream, crate = "processors")]
fn shout(chunk: &Chunk) -> StreamAction {
    let _ = chunk;
    StreamAction::Pass
}

fn main() {}
