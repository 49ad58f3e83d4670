//! With `Send` and `Sync`, a type parameter that may borrow is the one error left: a processor
//! lives as long as the agents it is in.
use processors::prelude::*;

/// Drops streamed text that contains one of its words, of any type.
struct Filter<T> {
    words: Vec<T>,
}

#[processor]
impl<T: AsRef<str> + Send + Sync> Filter<T> {
    fn process_output_stream(&self, chunk: &Chunk) -> StreamAction {
        match chunk.text_delta() {
            Some(t) if self.words.iter().any(|w| t.contains(w.as_ref())) => StreamAction::Drop,
            _ => StreamAction::Pass,
        }
    }
}

fn main() {}
