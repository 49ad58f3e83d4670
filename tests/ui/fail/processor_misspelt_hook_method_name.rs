use processors::prelude::*;

#[processor(process_ouput_stream)]
fn shout(chunk: &Chunk) -> StreamAction {
    let _ = chunk;
    StreamAction::Pass
}

fn main() {}
