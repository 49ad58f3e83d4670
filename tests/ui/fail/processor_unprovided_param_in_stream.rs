use processors::prelude::*;

#[processor(output_stream)]
fn annotate(chunk: &Chunk, list: &mut MessageList) -> StreamAction {
    let _ = (chunk, list);
    StreamAction::Pass
}

fn main() {}
