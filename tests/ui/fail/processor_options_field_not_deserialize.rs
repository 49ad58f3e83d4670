use processors::prelude::*;

struct Limit(usize);

/// Cuts the stream.
#[processor(output_stream, options)]
fn cut(chunk: &Chunk, #[config] limit: &Limit) -> StreamAction {
    let _ = limit.0;
    chunk.clone().into()
}

fn main() {}
