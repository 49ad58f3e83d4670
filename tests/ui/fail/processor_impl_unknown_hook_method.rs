use processors::prelude::*;

struct Shout;

#[processor]
impl Shout {
    fn process_ouput_stream(&self, chunk: &Chunk) -> StreamAction {
        let _ = chunk;
        StreamAction::Pass
    }
}

fn main() {}
