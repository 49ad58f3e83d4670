use processors::prelude::*;

#[processor(output_stream)]
fn count(chunk: &Chunk, state: usize) -> StreamAction {
    let _ = (chunk, state);
    StreamAction::Pass
}

fn main() {}
