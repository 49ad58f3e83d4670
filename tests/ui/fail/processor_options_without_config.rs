use processors::prelude::*;

/// Upper-cases the stream.
#[processor(output_stream, options)]
fn shout(chunk: &Chunk) -> StreamAction {
    chunk.clone().map_text(|t| t.to_uppercase()).into()
}

fn main() {}
