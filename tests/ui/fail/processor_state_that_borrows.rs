use processors::prelude::*;

#[processor(output_stream)]
fn collect(chunk: &Chunk, state: &mut Vec<&str>) -> StreamAction {
    let _ = (chunk, state);
    StreamAction::Pass
}

fn main() {}
