use processors::prelude::*;

#[processor(output_stream)]
fn self_(chunk: &Chunk) -> StreamAction {
    let _ = chunk;
    StreamAction::Pass
}

fn main() {}
