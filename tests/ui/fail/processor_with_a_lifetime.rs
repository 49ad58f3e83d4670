use processors::prelude::*;

/// Drops text with one of the words it borrows.
struct Filter<'a> {
    words: &'a [&'a str],
}

#[processor]
impl<'a> Filter<'a> {
    fn process_output_stream(&self, chunk: &Chunk) -> StreamAction {
        match chunk.text_delta() {
            Some(t) if self.words.iter().any(|w| t.contains(w)) => StreamAction::Drop,
            _ => StreamAction::Pass,
        }
    }
}

fn main() {}
