use processors::prelude::*;

#[processor(output_stream)]
fn shout(chunk: &Chunk) -> String {
    chunk.text_delta().unwrap_or_default().to_uppercase()
}

fn main() {}
