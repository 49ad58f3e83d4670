use processors::prelude::*;

struct Shout;

#[processor(name = Loud)]
impl Shout {
    fn process_output_stream(&self, chunk: &Chunk) -> StreamAction {
        let _ = chunk;
        StreamAction::Pass
    }
}

fn main() {}
