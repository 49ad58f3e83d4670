use processors::prelude::*;

struct Shout;

trait Loud {
    fn process_output_stream(&self, chunk: &Chunk) -> StreamAction;
}

#[processor]
impl Loud for Shout {
    fn process_output_stream(&self, chunk: &Chunk) -> StreamAction {
        let _ = chunk;
        StreamAction::Pass
    }
}

fn main() {}
