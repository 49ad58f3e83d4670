use processors::prelude::*;

struct Counter {
    seen: usize,
}

#[processor]
impl Counter {
    fn process_output_stream(&mut self, chunk: &Chunk) -> StreamAction {
        let _ = chunk;
        self.seen += 1;
        StreamAction::Pass
    }
}

fn main() {}
