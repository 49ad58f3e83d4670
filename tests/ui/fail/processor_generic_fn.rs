use processors::prelude::*;

#[processor(output_stream)]
fn pass<T>(chunk: &Chunk) -> StreamAction {
    let _ = chunk;
    StreamAction::Pass
}

fn main() {}
