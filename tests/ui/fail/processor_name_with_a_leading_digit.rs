use processors::prelude::*;

#[processor(output_stream, id = "second-pass")]
fn _2nd_pass(chunk: &Chunk) -> StreamAction {
    let _ = chunk;
    StreamAction::Pass
}

fn main() {}
