use processors::prelude::*;
use std::cell::Cell;

/// Counts the chunks it sees, in a `Cell`: not `Sync`.
struct Counter {
    seen: Cell<u32>,
}

#[processor]
impl Counter {
    fn process_output_stream(&self, chunk: &Chunk) -> StreamAction {
        self.seen.set(self.seen.get() + 1);
        let _ = chunk;
        StreamAction::Pass
    }
}

fn main() {}
