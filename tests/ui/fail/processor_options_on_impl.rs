use processors::prelude::*;

struct Counter;

#[processor(options)]
impl Counter {
    fn process_output_stream(&self, chunk: &Chunk) -> StreamAction {
        let _ = chunk;
        StreamAction::Pass
    }
}

fn main() {}
